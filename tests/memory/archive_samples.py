"""A memory built through the real pipeline and API for the export / import tests, and readers of archives."""

from __future__ import annotations

import io
import json
import tarfile
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile

from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona

DAY = "2026-04-22"
FILE_BYTES = b"Zephyr quokka lantern: the garden shed key is under the blue pot.\n"
ARTIFACT_BYTES = b"build log: all green\n"
QUERIES = ("morning meetings", "spec", "garden shed key", "body weight", "editor")


def ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.content
    return dict(response.json())


def say(api: Api, persona: Persona, *texts: str, conversation: str = "chat") -> None:
    messages = [
        {"id": f"{conversation}-m{n}", "role": "user", "content": text, "timestamp": f"{DAY}T10:00:{n:02d}Z"}
        for n, text in enumerate(texts)
    ]
    body = {"conversation": {"id": conversation, "messages": messages}}
    run_operation(ok(api.post("/ingest/conversation", persona, body), 202)["operationId"])


def build_memory(api: Api, persona: Persona, partition: str | None = None) -> None:
    """Facts and a task with a due date said in a conversation, a document file, a metric reading, a keyed
    memory, an agent session with events, a scratchpad and an artifact: every kind an archive carries."""
    where = {"partitionKey": partition} if partition else {}
    say(api, persona, "I prefer morning meetings.", "Marcel will send the spec by Friday.")
    form = {
        "file": SimpleUploadedFile("shed.txt", FILE_BYTES, content_type="text/plain"),
        "document": json.dumps({"id": "doc_shed", "title": "Shed notes"}),
    }
    uploaded = api.client.post("/ingest/file", data=form, headers=persona.headers)
    run_operation(ok(uploaded, 202)["operationId"])
    reading = {"slug": "body_weight", "value": 80.5, "occurredAt": f"{DAY}T07:00:00Z", "label": "Body weight"}
    ok(api.post("/metrics/observations", persona, {**reading, "unit": "kg", **where}), 201)
    ok(api.post("/memory/save", persona, {"key": "editor", "value": "The editor of choice is Helix.", **where}))
    session = ok(api.post("/session/create", persona, {"title": "Shed inventory", "agent": "claude-code"}), 201)
    for n in range(2):
        event = {"sessionId": session["session"]["sessionId"], "kind": "step", "payload": {"n": n}}
        assert api.post("/session/append-event", persona, event).status_code in (200, 201)
    ok(api.post("/scratchpad/write", persona, {"content": "Check the shed roof."}))
    put = api.client.put("/artifact", data=ARTIFACT_BYTES, content_type="text/plain", headers=persona.headers)
    assert put.status_code == 201, put.content


def archive_members(data: bytes) -> dict[str, bytes]:
    """Every file of an archive by name, in order (a valid tar or an exception)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        members: dict[str, bytes] = {}
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            assert handle is not None
            members[member.name] = handle.read()
    return members


def rows(members: dict[str, bytes], kind: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in members[f"{kind}.jsonl"].splitlines()]


def searched(api: Api, persona: Persona) -> dict[str, list[str]]:
    """The texts /query/search answers for each sample query."""
    return {
        query: sorted(
            result["text"] for result in ok(api.post("/query/search", persona, {"query": query}))["searchResults"]
        )
        for query in QUERIES
    }


def open_commitments(api: Api, persona: Persona) -> list[tuple[str, str, str, str]]:
    answer = ok(api.post("/commitments/open", persona, {}))["commitments"]
    return sorted(
        (item["label"], item["status"], item["dueOn"], (item["owner"] or {}).get("label", "")) for item in answer
    )

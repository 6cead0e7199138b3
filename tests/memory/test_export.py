"""POST /maintenance/export and manage.py export_memory: one user's memory as one versioned tar archive."""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.http import StreamingHttpResponse

from memory.models import Blob, Claim, Node, Partition, Scope, Source, User
from memory.services.export import FORMAT_NAME, FORMAT_VERSION, KINDS
from tests.conftest import Api, Persona, error_code, issue
from tests.memory.archive_samples import ARTIFACT_BYTES, FILE_BYTES, archive_members, build_memory, ok, rows, say

pytestmark = pytest.mark.django_db


def export(api: Api, persona: Persona | None, **body: Any) -> Any:
    return api.post("/maintenance/export", persona, body)


def archive(response: Any) -> bytes:
    assert response.status_code == 200, response.content if not response.streaming else ""
    return b"".join(response.streaming_content)


def test_an_export_holds_every_kind_with_a_manifest_of_counts_and_checksums(
    api: Api, owner: Persona, alice: User
) -> None:
    build_memory(api, owner)
    response = export(api, owner)
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/x-tar"
    assert response["Content-Disposition"].startswith('attachment; filename="memory-alice-')
    members = archive_members(archive(response))
    names = list(members)
    assert names[0] == "manifest.json"
    manifest = json.loads(members["manifest.json"])
    assert (manifest["format"], manifest["format_version"], manifest["whole"]) == (FORMAT_NAME, FORMAT_VERSION, True)
    assert manifest["user"]["username"] == "alice" and manifest["migrations"]["memory"]
    assert [p["key"] for p in manifest["partitions"]] == ["memory:personal"]
    listed = {entry["name"]: entry for entry in manifest["files"]}
    assert set(listed) == set(names) - {"manifest.json"}
    for name, entry in listed.items():
        assert hashlib.sha256(members[name]).hexdigest() == entry["sha256"], name
        assert len(members[name]) == entry["bytes"], name
    assert {kind.filename for kind in KINDS} <= set(listed)
    # Counts and ids as stored, for each kind that matters most.
    for kind, model in (("sources", Source), ("nodes", Node), ("claims", Claim), ("blobs", Blob)):
        exported = rows(members, kind)
        assert listed[f"{kind}.jsonl"]["rows"] == len(exported) == model.objects.filter(owner=alice).count()
        assert {row["id"] for row in exported} == set(model.objects.filter(owner=alice).values_list("id", flat=True))
    # The originals, by content address: the file's and the artifact's.
    for data in (FILE_BYTES, ARTIFACT_BYTES):
        assert members[f"blobs/{hashlib.sha256(data).hexdigest()}"] == data
    # Every kind of the sample memory is there.
    claims = rows(members, "claims")
    assert any(claim["key"] == "editor" for claim in claims)
    assert any(claim["predicate"] == "HAS_TASK_STATUS" for claim in claims)
    assert any(node["type"] == "Task" for node in rows(members, "nodes"))
    assert rows(members, "metric_observations")[0]["value"] == 80.5
    assert len(rows(members, "session_events")) == 2
    assert rows(members, "scratchpads")[0]["content"] == "Check the shed roof."
    assert any(source["kind"] == "message" for source in rows(members, "sources"))
    assert rows(members, "chunks") and rows(members, "evidence") and rows(members, "memory_events")
    # Never vectors, never secrets or where blobs lie on this disk; datetimes in ISO 8601.
    text = b"".join(members[name] for name in names if name.endswith(".jsonl")).decode()
    assert '"embedding' not in text and "secret_hash" not in text and "storage_name" not in text
    token = owner.token
    assert token is not None
    assert token.secret_hash not in text and owner.secret not in text
    assert [row["label"] for row in rows(members, "access_tokens")] == ["owner"]
    recorded = Claim.objects.filter(owner=alice).order_by("id").values_list("recorded_at", flat=True)
    assert [claim["recorded_at"] for claim in claims] == [at.isoformat() for at in recorded]


def test_the_archive_streams_from_a_generator(api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    response = export(api, owner)
    assert isinstance(response, StreamingHttpResponse) and response.streaming
    pieces = list(response.streaming_content)  # type: ignore[arg-type]  # a plain generator under WSGI
    assert len(pieces) > 3  # headers, files and padding go out one by one, never as one built archive
    assert archive_members(b"".join(pieces))["manifest.json"]


def test_a_partition_export_holds_only_that_partition(api: Api, owner: Persona, alice: User) -> None:
    build_memory(api, owner)
    work = Partition.objects.create(owner=alice, key="work", label="Work")
    ok(api.post("/memory/save", owner, {"key": "stack", "value": "Django on PostgreSQL.", "partitionKey": "work"}))
    members = archive_members(archive(export(api, owner, partition="work")))
    manifest = json.loads(members["manifest.json"])
    assert (manifest["whole"], [p["key"] for p in manifest["partitions"]]) == (False, ["work"])
    for kind in KINDS:
        for row in rows(members, kind.name) if members[kind.filename] else []:
            if "partition_id" in row:
                assert row["partition_id"] == work.id, (kind.name, row)
    assert [claim["key"] for claim in rows(members, "claims")] == ["stack"]
    assert members["sources.jsonl"] == b"" and members["access_tokens.jsonl"] == b""
    assert not [name for name in members if name.startswith("blobs/")]


def test_another_user_exports_only_their_own_memory(api: Api, owner: Persona, other: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    members = archive_members(archive(export(api, other)))
    assert json.loads(members["manifest.json"])["user"]["username"] == "bob"
    everything = b"".join(members.values())
    assert b"morning" not in everything and b"alice" not in everything
    assert members["claims.jsonl"] == b""


def test_a_token_limited_to_some_partitions_exports_only_those(api: Api, alice: User) -> None:
    Partition.objects.create(owner=alice, key="work")
    limited = issue(alice, "limited", scopes=Scope.values, partition_keys=["work"], default_partition_key="work")
    manifest = json.loads(archive_members(archive(export(api, limited)))["manifest.json"])
    assert [p["key"] for p in manifest["partitions"]] == ["work"]
    assert error_code(export(api, limited, partition="memory:personal")) == "NOT_FOUND"


@pytest.mark.parametrize(
    ("persona", "body", "status", "code"),
    [
        ("outsider", {}, 401, "TOKEN_INVALID"),
        ("revoked", {}, 401, "TOKEN_REVOKED"),
        ("reader", {}, 403, "SCOPE_REQUIRED"),
        ("owner", {"partition": "nowhere"}, 404, "NOT_FOUND"),
        ("owner", {"partitions": "memory:personal"}, 400, "VALIDATION_ERROR"),
        ("owner", {"partition": ["memory:personal"]}, 400, "VALIDATION_ERROR"),
        ("owner", {"userId": "bob"}, 404, "NOT_FOUND"),
    ],
)
def test_refusals(api: Api, request: pytest.FixtureRequest, alice: User, persona: str, body: dict[str, Any],
                  status: int, code: str) -> None:  # fmt: skip
    caller = (
        issue(alice, "reader", scopes=[Scope.READ, Scope.WRITE])
        if persona == "reader"
        else request.getfixturevalue(persona)
    )
    response = export(api, caller, **body)
    assert (response.status_code, error_code(response)) == (status, code)


def test_malformed_json_is_refused(api: Api, owner: Persona) -> None:
    response = api.post("/maintenance/export", owner, raw="{not json")
    assert (response.status_code, error_code(response)) == (400, "MALFORMED_JSON")


def test_the_command_writes_the_archive_to_a_file_or_stdout(api: Api, owner: Persona, tmp_path: Any,
                                                            capsysbinary: Any) -> None:  # fmt: skip
    say(api, owner, "I prefer morning meetings.")
    target = tmp_path / "alice.tar"
    out = io.StringIO()
    call_command("export_memory", "--user", "alice", "--output", str(target), stdout=out)
    assert out.getvalue().split() == [str(target), str(target.stat().st_size)]
    from_file = archive_members(target.read_bytes())
    assert b"morning" in from_file["claims.jsonl"]
    call_command("export_memory", "--user", "alice", "--partition", "memory:personal")
    from_stdout = archive_members(capsysbinary.readouterr().out)
    assert from_stdout["claims.jsonl"] == from_file["claims.jsonl"]
    with pytest.raises(Exception, match="no partition nowhere"):
        call_command("export_memory", "--user", "alice", "--partition", "nowhere")
    with pytest.raises(Exception, match="No user named"):
        call_command("export_memory", "--user", "nobody")

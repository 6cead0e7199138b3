"""Ingestion over REST: receipts, replays, identity rules, children, scopes, bad input, personas."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.access import access_for_token
from memory.models import MemoryEvent, Operation, Partition, Source
from memory.pipeline.runner import run_operation
from memory.services.ingestion import DocumentIn, ingest_document
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db


def conversation(*messages: tuple[str, str, str], conversation_id: str = "chat_456", **extra: Any) -> dict:
    return {
        "conversation": {
            "id": conversation_id,
            "messages": [
                {"id": mid, "role": role, "content": text, "timestamp": f"2026-04-26T13:00:{n:02d}.000Z"}
                for n, (mid, role, text) in enumerate(messages)
            ],
            **extra,
        }
    }


FIRST = conversation(("msg_001", "user", "Let's continue the claims refactor."))
BOTH = conversation(
    ("msg_001", "user", "Let's continue the claims refactor."),
    ("msg_002", "assistant", "I'll inspect the plan and continue with the next slice."),
)


def document(doc_id: str = "doc_1", content: str = "Document text.", **extra: Any) -> dict:
    return {"document": {"id": doc_id, "content": content, **extra}}


def rows() -> tuple[int, int, int]:
    return Source.objects.count(), Operation.objects.count(), MemoryEvent.objects.count()


def test_a_conversation_gets_a_receipt_at_once(api: Api, owner: Persona) -> None:
    response = api.post("/ingest/conversation", owner, BOTH)
    assert response.status_code == 202
    receipt = response.json()
    assert set(receipt) == {"operationId", "sourceId", "status", "deduplicated"}
    assert (receipt["status"], receipt["deduplicated"]) == ("queued", False)
    assert receipt["operationId"].startswith("op_") and receipt["sourceId"].startswith("src_")
    messages = Source.objects.filter(kind="message").order_by("ordinal")
    assert [(m.message_id, m.role, m.parent_id) for m in messages] == [
        ("msg_001", "user", receipt["sourceId"]),
        ("msg_002", "assistant", receipt["sourceId"]),
    ]


def test_replaying_an_identical_request_writes_nothing(api: Api, owner: Persona) -> None:
    first = api.post("/ingest/conversation", owner, BOTH).json()
    before = rows()
    again = api.post("/ingest/conversation", owner, BOTH)
    assert again.status_code == 202
    assert again.json() == {**first, "deduplicated": True}
    assert rows() == before


def test_new_turns_of_a_conversation_are_added_with_a_new_receipt(api: Api, owner: Persona) -> None:
    first = api.post("/ingest/conversation", owner, FIRST).json()
    second = api.post("/ingest/conversation", owner, BOTH).json()
    assert second["sourceId"] == first["sourceId"]
    assert second["operationId"] != first["operationId"]
    assert Operation.objects.get(pk=second["operationId"]).counts == {"messages": 1}
    assert Source.objects.filter(kind="message").count() == 2


def test_a_subset_of_known_turns_is_deduplicated(api: Api, owner: Persona) -> None:
    api.post("/ingest/conversation", owner, BOTH)
    before = rows()
    answer = api.post("/ingest/conversation", owner, FIRST).json()
    assert answer["deduplicated"] is True
    assert rows() == before


def test_changed_text_for_a_known_message_id_is_a_conflict(api: Api, owner: Persona) -> None:
    api.post("/ingest/conversation", owner, FIRST)
    changed = conversation(("msg_001", "user", "Something else entirely."))
    response = api.post("/ingest/conversation", owner, changed)
    assert response.status_code == 409
    assert error_code(response) == "CONFLICT"
    assert response.json()["error"]["details"]["messageIds"] == ["msg_001"]


def test_a_turn_whose_identity_another_conversations_turn_holds_is_a_conflict_and_writes_nothing(
    api: Api, owner: Persona
) -> None:
    # A turn's identity is "<conversation id>/<message id>": turn "b/c" of "a" meets turn "c" of "a/b".
    api.post("/ingest/conversation", owner, conversation(("c", "user", "First."), conversation_id="a/b"))
    before = rows()

    response = api.post("/ingest/conversation", owner, conversation(("b/c", "user", "Second."), conversation_id="a"))

    assert response.status_code == 409
    assert error_code(response) == "CONFLICT"
    assert response.json()["error"]["details"]["messageIds"] == ["b/c"]
    assert rows() == before  # not even the new conversation "a"


def test_update_existing_tombstones_and_recreates(api: Api, owner: Persona) -> None:
    first = api.post("/ingest/conversation", owner, FIRST).json()
    changed = conversation(("msg_001", "user", "Something else entirely."))
    response = api.post("/ingest/conversation", owner, {**changed, "updateExisting": True})
    assert response.status_code == 202
    second = response.json()
    assert second["sourceId"] != first["sourceId"]
    old, new = Source.objects.get(pk=first["sourceId"]), Source.objects.get(pk=second["sourceId"])
    assert old.tombstoned_at is not None and new.version == 2
    assert Source.objects.live().filter(kind="message").get().content == "Something else entirely."


def test_a_document_replay_returns_the_original_receipt(api: Api, owner: Persona) -> None:
    first = api.post("/ingest/document", owner, document(scope="reference")).json()
    assert Source.objects.get(pk=first["sourceId"]).scope == "reference"
    before = rows()
    assert api.post("/ingest/document", owner, document(scope="reference")).json() == {**first, "deduplicated": True}
    assert rows() == before


def test_a_title_only_change_refreshes_the_label_without_processing(api: Api, owner: Persona) -> None:
    first = api.post("/ingest/document", owner, document(title="Draft")).json()
    operations = Operation.objects.count()
    answer = api.post("/ingest/document", owner, document(title="Final notes")).json()
    assert answer["deduplicated"] is True and answer["operationId"] == first["operationId"]
    assert Source.objects.get(pk=first["sourceId"]).title == "Final notes"
    assert Operation.objects.count() == operations


def test_other_content_under_a_known_document_id_is_a_conflict(api: Api, owner: Persona) -> None:
    api.post("/ingest/document", owner, document())
    response = api.post("/ingest/document", owner, document(content="Rewritten."))
    assert response.status_code == 409
    assert error_code(response) == "CONFLICT"
    replaced = api.post("/ingest/document", owner, {**document(content="Rewritten."), "updateExisting": True})
    assert replaced.status_code == 202
    assert Source.objects.live().get(external_id="doc_1").content == "Rewritten."


def test_a_missing_timestamp_falls_back_to_the_time_of_the_first_receipt(api: Api, owner: Persona) -> None:
    before = timezone.now()
    first = api.post("/ingest/document", owner, document()).json()
    stored = Source.objects.get(pk=first["sourceId"]).occurred_at
    assert before <= stored <= timezone.now()
    replay = api.post("/ingest/document", owner, document()).json()
    got = api.post("/source/get", owner, {"sourceId": replay["sourceId"]}).json()
    assert parse_datetime(got["source"]["occurredAt"]) == stored


def test_a_persons_message_keeps_its_message_fields(api: Api, owner: Persona) -> None:
    body = document(
        "email_77", "Can you send the spec by Friday?", sourceKind="message", messageId="<77@mail>",
        threadId="thread-9", authoredAt="2026-04-01T10:00:00Z",
        participants=[{"email": "marcel@example.com", "role": "from"}, {"providerId": "slack:U123"}],
    )  # fmt: skip
    receipt = api.post("/ingest/document", owner, body).json()
    source = Source.objects.get(pk=receipt["sourceId"])
    assert (source.kind, source.message_id, source.thread_id) == ("message", "<77@mail>", "thread-9")
    assert source.participants[0]["email"] == "marcel@example.com"
    assert source.occurred_at.isoformat().startswith("2026-04-01T10:00")


def test_children_inherit_the_parents_partition(api: Api, owner: Persona, alice) -> None:
    PartitionFactory(owner=alice, key="project:apollo")
    parent = api.post("/ingest/document", owner, {**document("email_1"), "partitionKey": "project:apollo"}).json()
    child = api.post("/ingest/document", owner, document("attachment_1", "Attached text.", parentId="email_1")).json()
    source = Source.objects.select_related("partition").get(pk=child["sourceId"])
    assert source.partition.key == "project:apollo"
    assert source.parent_id == parent["sourceId"]


def test_an_unknown_parent_is_not_found(api: Api, owner: Persona) -> None:
    response = api.post("/ingest/document", owner, document("a", parentId="nope"))
    assert error_code(response) == "NOT_FOUND"


def test_a_retired_identity_accepts_nothing(api: Api, owner: Persona) -> None:
    receipt = api.post("/ingest/document", owner, document("email_1")).json()
    erased = api.post("/source/delete", owner, {"sourceId": receipt["sourceId"], "retireIdentity": True})
    assert erased.status_code == 200
    again = api.post("/ingest/document", owner, document("email_1"))
    assert again.status_code == 409
    assert error_code(again) == "IDENTITY_RETIRED"
    child = api.post("/ingest/document", owner, document("att", parentId="email_1"))
    assert error_code(child) == "IDENTITY_RETIRED"


def test_a_transcript_keeps_its_speakers(api: Api, owner: Persona) -> None:
    body = {"transcript": {"id": "meet_1", "sourceKind": "meeting", "segments": [
        {"speaker": "Marcel", "text": "Can you send the spec by Friday?", "start": 0},
        {"speaker": "Me", "text": "Yes, I will.", "start": 4.5},
    ]}}  # fmt: skip
    receipt = api.post("/ingest/transcript", owner, body).json()
    source = Source.objects.get(pk=receipt["sourceId"])
    assert source.content == "Marcel: Can you send the spec by Friday?\nMe: Yes, I will."
    assert source.source_context == {"origin": "meeting"}
    run_operation(receipt["operationId"])
    assert list(source.chunks.values_list("speaker", flat=True)) == [""]  # one chunk, two speakers


def test_a_plain_text_transcript_is_split_into_turns(api: Api, owner: Persona) -> None:
    body = {"transcript": {"id": "call_1", "content": "Anna: Hello\nBen: Hi Anna"}}
    receipt = api.post("/ingest/transcript", owner, body).json()
    assert [s["speaker"] for s in Source.objects.get(pk=receipt["sourceId"]).segments] == ["Anna", "Ben"]


def test_processing_chunks_messages_with_their_way_back(api: Api, owner: Persona) -> None:
    receipt = api.post("/ingest/conversation", owner, BOTH).json()
    run_operation(receipt["operationId"])
    body = api.post("/source/processing/get", owner, {"operationId": receipt["operationId"]}).json()
    assert body["status"] == "completed"
    got = api.post("/source/get", owner, {"sourceId": receipt["sourceId"], "includeContent": True}).json()
    assert [m["id"] for m in got["content"]["messages"]] == ["msg_001", "msg_002"]
    message = Source.objects.get(message_id="msg_002")
    chunk = message.chunks.get()
    assert (chunk.message_id, chunk.speaker, chunk.authored_at) == ("msg_002", "assistant", message.authored_at)


@pytest.mark.django_db(transaction=True)
def test_two_identical_requests_at_once_store_one_source(owner: Persona) -> None:
    assert owner.token is not None
    receipts: list[Any] = []
    barrier = threading.Barrier(2)

    def send() -> None:
        access = access_for_token(token=owner.token, user_id=None, partition_key=None, workspace=False)  # type: ignore[arg-type]
        barrier.wait()
        receipts.append(ingest_document(access=access, document=DocumentIn(id="same", content="Same text.")))
        connection.close()

    threads = [threading.Thread(target=send) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Source.objects.filter(external_id="same").count() == 1
    assert sorted(r.deduplicated for r in receipts) == [False, True]
    assert len({r.operation.pk for r in receipts}) == 1


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/ingest/conversation", {"conversation": {"id": "c", "messages": []}}, "conversation"),
        ("/ingest/conversation", {"conversation": {"id": "c", "messages": [{"id": "m"}]}}, "conversation"),
        ("/ingest/conversation", {"conversation": {"id": "c", "messages": "hi"}}, "conversation"),
        ("/ingest/document", {"document": {"id": "d"}}, "document"),
        ("/ingest/document", {"document": {"id": "d", "content": "x", "scope": "public"}}, "document"),
        ("/ingest/document", {"document": {"id": "d", "content": "x", "sourceContext": [1]}}, "document"),
        ("/ingest/document", {"document": {"id": "d", "content": "x", "participants": [{"name": "A"}]}}, "document"),
        ("/ingest/document", {"document": {"id": "d", "content": "x", "timestamp": "yesterday"}}, "document"),
        ("/ingest/document", {"document": {"id": "d", "content": "x", "colour": "red"}}, "document"),
        ("/ingest/transcript", {"transcript": {"id": "t"}}, "transcript"),
        ("/ingest/document", {"document": "text"}, "document"),
    ],
)
def test_malformed_ingestion_is_refused_and_writes_nothing(
    api: Api, owner: Persona, path: str, body: dict, field: str
) -> None:
    before = rows()
    response = api.post(path, owner, body)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]
    assert rows() == before


def test_a_read_only_token_cannot_ingest(api: Api, alice) -> None:
    reader = issue(alice, "reader", scopes=["read"])
    assert error_code(api.post("/ingest/document", reader, document())) == "SCOPE_REQUIRED"
    assert not Source.objects.exists()


def test_an_inactive_partition_refuses_new_content(api: Api, owner: Persona, alice) -> None:
    PartitionFactory(owner=alice, key="project:old", is_active=False)
    response = api.post("/ingest/document", owner, {**document(), "partitionKey": "project:old"})
    assert response.status_code == 409
    assert error_code(response) == "PARTITION_INACTIVE"


def test_a_host_token_ingests_for_its_user(api: Api, host: Persona, alice) -> None:
    receipt = api.post("/ingest/document", host, {**document(), "userId": "alice"}).json()
    assert Source.objects.get(pk=receipt["sourceId"]).owner == alice
    partition = Partition.objects.get(owner=alice, key="memory:personal")
    assert Source.objects.get(pk=receipt["sourceId"]).partition == partition


def test_another_user_reaches_none_of_it(api: Api, owner: Persona, other: Persona) -> None:
    receipt = api.post("/ingest/document", owner, document()).json()
    for path, body in [
        ("/source/get", {"sourceId": receipt["sourceId"]}),
        ("/source/delete", {"sourceId": receipt["sourceId"]}),
        ("/source/processing/get", {"operationId": receipt["operationId"]}),
        ("/source/processing/retry", {"operationId": receipt["operationId"]}),
    ]:
        response = api.post(path, other, body)
        assert response.status_code == 404, path
        assert error_code(response) == "NOT_FOUND"
    assert api.post("/source/list", other).json()["sources"] == []
    assert Source.objects.filter(pk=receipt["sourceId"]).exists()


def test_listing_filters_and_pages(api: Api, owner: Persona) -> None:
    for n in range(5):
        api.post("/ingest/document", owner, document(f"d{n}", f"Text {n}", timestamp=f"2026-04-0{n + 1}T10:00:00Z"))
    api.post("/ingest/document", owner, document("ref", "Book", scope="reference", timestamp="2026-05-01T10:00:00Z"))
    first = api.post("/source/list", owner, {"limit": 2, "scope": "personal"}).json()
    assert [s["id"] for s in first["sources"]] == ["d4", "d3"]
    second = api.post("/source/list", owner, {"limit": 2, "scope": "personal", "cursor": first["nextCursor"]}).json()
    assert [s["id"] for s in second["sources"]] == ["d2", "d1"]
    window = api.post("/source/list", owner, {"since": "2026-04-02T00:00:00Z", "until": "2026-04-04T00:00:00Z"}).json()
    assert [s["id"] for s in window["sources"]] == ["d2", "d1"]
    assert [s["id"] for s in api.post("/source/list", owner, {"scope": "reference"}).json()["sources"]] == ["ref"]
    bad = api.post("/source/list", owner, {"cursor": "not-a-cursor"})
    assert error_code(bad) == "VALIDATION_ERROR"


def test_listing_filters_by_the_status_of_the_newest_receipt(api: Api, owner: Persona) -> None:
    done = api.post("/ingest/document", owner, document("done", "Finished text")).json()
    api.post("/ingest/document", owner, document("waiting", "Queued text"))
    run_operation(done["operationId"])
    listed = {status: [s["id"] for s in api.post("/source/list", owner, {"status": status}).json()["sources"]]
              for status in ("completed", "queued", "failed")}  # fmt: skip
    assert listed == {"completed": ["done"], "queued": ["waiting"], "failed": []}
    api.post("/ingest/document", owner, {**document("done", "Changed text"), "updateExisting": True})
    queued = sorted(s["id"] for s in api.post("/source/list", owner, {"status": "queued"}).json()["sources"])
    assert queued == ["done", "waiting"]  # the new version's receipt is the newest
    assert error_code(api.post("/source/list", owner, {"status": "stuck"})) == "VALIDATION_ERROR"


def test_replaying_a_request_that_was_since_replaced_is_a_conflict(api: Api, owner: Persona) -> None:
    api.post("/ingest/document", owner, document(content="A"))
    api.post("/ingest/document", owner, {**document(content="B"), "updateExisting": True})
    response = api.post("/ingest/document", owner, document(content="A"))
    assert response.status_code == 409
    assert error_code(response) == "CONFLICT"


def test_repeated_message_ids_in_one_request_are_refused(api: Api, owner: Persona) -> None:
    body = conversation(("m1", "user", "One."), ("m1", "user", "Two."))
    response = api.post("/ingest/conversation", owner, body)
    assert response.status_code == 400
    assert "messages" in response.json()["error"]["details"]["conversation"]


def test_the_longest_ids_are_stored(api: Api, owner: Persona) -> None:
    body = conversation(("m" * 200, "user", "Long ids."), conversation_id="c" * 200)
    assert api.post("/ingest/conversation", owner, body).status_code == 202


def test_a_message_id_colliding_with_another_source_is_a_conflict(api: Api, owner: Persona) -> None:
    api.post("/ingest/document", owner, document("chat_456/msg_001", sourceKind="message"))
    response = api.post("/ingest/conversation", owner, FIRST)
    assert response.status_code == 409
    assert error_code(response) == "CONFLICT"


def test_a_nul_character_in_source_context_is_refused(api: Api, owner: Persona) -> None:
    response = api.post("/ingest/document", owner, document(sourceContext={"origin": "mail\u0000box"}))
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


@pytest.mark.parametrize(
    "cursor", ["WyIyMDI2LTEzLTAxVDAwOjAwOjAwWiIsICJ4Il0=", "WyIyMDI2LTAxLTAxVDAwOjAwOjAwWiIsIG51bGxd"]
)
def test_crafted_cursors_are_validation_errors(api: Api, owner: Persona, cursor: str) -> None:
    response = api.post("/source/list", owner, {"cursor": cursor})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


def test_an_erased_and_retired_message_is_not_stored_again(api: Api, owner: Persona) -> None:
    api.post("/ingest/conversation", owner, BOTH)
    message = Source.objects.get(message_id="msg_002")
    erased = api.post("/source/delete", owner, {"sourceId": message.pk, "retireIdentity": True})
    assert erased.status_code == 200
    again = api.post("/ingest/conversation", owner, {**BOTH, "conversation": {**BOTH["conversation"], "title": "x"}})
    assert again.status_code == 202
    assert list(Source.objects.live().filter(kind="message").values_list("message_id", flat=True)) == ["msg_001"]
    assert not Source.objects.filter(content__contains="inspect the plan").exists()


def test_transcript_segments_with_line_breaks_keep_their_speakers(api: Api, owner: Persona, settings) -> None:
    settings.CHUNK_TARGET_CHARS = 30
    body = {"transcript": {"id": "t", "segments": [
        {"speaker": "Anna", "text": "First line\nsecond line of Anna"},
        {"speaker": "Ben", "text": "Ben answers at some length here"},
    ]}}  # fmt: skip
    receipt = api.post("/ingest/transcript", owner, body).json()
    run_operation(receipt["operationId"])
    chunks = list(Source.objects.get(pk=receipt["sourceId"]).chunks.order_by("ordinal"))
    assert [(c.speaker, c.text) for c in chunks] == [
        ("Anna", "Anna: First line\nsecond line of Anna"),
        ("Ben", "Ben: Ben answers at some length here"),
    ]


def test_a_partition_limited_token_reaches_no_receipt_outside_its_partitions(api: Api, owner: Persona, alice) -> None:
    PartitionFactory(owner=alice, key="project:apollo")
    receipt = api.post("/ingest/document", owner, {**document(), "partitionKey": "project:apollo"}).json()
    limited = issue(alice, "limited", scopes=["read", "write", "edit"], partition_keys=["memory:personal"])
    for path, body in [
        ("/source/processing/get", {"operationId": receipt["operationId"]}),
        ("/source/processing/retry", {"operationId": receipt["operationId"]}),
        ("/source/delete", {"sourceId": receipt["sourceId"]}),
        ("/source/get", {"sourceId": receipt["sourceId"]}),
    ]:
        assert error_code(api.post(path, limited, body)) == "NOT_FOUND", path
    child = api.post("/ingest/document", limited, document("child", parentId="doc_1"))
    assert error_code(child) == "NOT_FOUND"


def test_a_short_job_writes_its_receipt_when_it_starts_and_ends_not_before_every_step(
    api: Api, owner: Persona, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.test.utils import CaptureQueriesContext

    from memory.pipeline import runner

    # A job shorter than the progress interval (fixed long here, so the count does not depend on the machine).
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 3600.0)
    receipt = api.post("/ingest/conversation", owner, BOTH).json()
    with CaptureQueriesContext(connection) as queries:
        run_operation(receipt["operationId"])
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('UPDATE "memory_operation"')]
    assert len(writes) == 2  # claimed (processing, the first step started), finished
    assert '"step"' in writes[0] and '"started_at"' in writes[0]
    done = api.post("/source/processing/get", owner, {"operationId": receipt["operationId"]}).json()
    assert done["status"] == "completed"
    assert [step["step"] for step in done["stepsDone"]] == [
        "convert", "chunk", "embed", "extract", "reconcile", "index", "notify",
    ]  # fmt: skip
    assert done["counts"]["chunks"] == 2

"""Erasure leaves no copy of the text anywhere: every text column of every table is searched."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.db import connection

from memory.embeddings import get_embedder
from memory.models import Blob, Chunk, MemoryEvent, Operation, Source
from memory.pipeline import steps
from memory.pipeline.runner import run_operation
from memory.services.embeddings import (
    CHUNK_VECTOR_FIELDS,
    blended,
    chunk_recipes,
    chunks_embed,
    chunks_embed_missing,
    recipe_texts,
    send_chunk_vectors_job,
)
from memory.tasks import embed_chunks
from tests.conftest import Api, Persona, error_code, issue

pytestmark = pytest.mark.django_db

MARKER = "zebra-marmalade-7731"


def tables_containing(text: str) -> list[str]:
    """Every (table, column) whose text, varchar, json or tsvector value contains `text`."""
    found = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'json', 'jsonb', 'tsvector')"
        )
        for table, column in cursor.fetchall():
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s', [f"%{text}%"])
            if cursor.fetchone()[0]:
                found.append(f"{table}.{column}")
    return found


def test_erasing_a_document_removes_every_copy_of_its_text(api: Api, owner: Persona) -> None:
    body = {"document": {"id": f"diary-{MARKER}", "title": f"About {MARKER}", "content": f"My {MARKER} secret.",
                         "sourceContext": {"note": MARKER}}}  # fmt: skip
    receipt = api.post("/ingest/document", owner, body).json()
    run_operation(receipt["operationId"])
    replaced = {"document": {**body["document"], "content": f"Second {MARKER} version."}, "updateExisting": True}
    second = api.post("/ingest/document", owner, replaced).json()
    run_operation(second["operationId"])
    assert tables_containing(MARKER)  # the scan finds it before erasure
    response = api.post("/source/delete", owner, {"sourceId": second["sourceId"]})
    assert response.status_code == 200
    assert response.json()["erasedSources"] == 2  # both versions
    assert tables_containing(MARKER) == []
    assert not Chunk.objects.exists()
    assert Operation.objects.filter(pk=receipt["operationId"]).exists()  # receipts keep their status
    assert MemoryEvent.objects.filter(action="source.erase").exists()


def test_erasing_a_conversation_removes_its_messages(api: Api, owner: Persona) -> None:
    body = {"conversation": {"id": "chat", "messages": [{"id": "m1", "role": "user", "content": f"I love {MARKER}."}]}}
    receipt = api.post("/ingest/conversation", owner, body).json()
    run_operation(receipt["operationId"])
    api.post("/source/delete", owner, {"sourceId": receipt["sourceId"]})
    assert tables_containing(MARKER) == []
    assert not Source.objects.exists()


def test_erasing_a_file_removes_its_blob_unless_shared(api: Api, owner: Persona) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    def upload(doc_id: str) -> dict:
        return api.client.post(
            "/ingest/file",
            data={"file": SimpleUploadedFile("n.txt", f"{MARKER} notes".encode(), content_type="text/plain"),
                  "document": f'{{"id": "{doc_id}"}}'},
            headers=owner.headers,
        ).json()  # fmt: skip

    first, second = upload("one"), upload("two")
    blob = Blob.objects.get()
    api.post("/source/delete", owner, {"sourceId": first["sourceId"]})
    assert Blob.objects.filter(pk=blob.pk).exists()  # still the original of "two"
    api.post("/source/delete", owner, {"sourceId": second["sourceId"]})
    assert not Blob.objects.exists()
    assert tables_containing(MARKER) == []


def test_erased_sources_are_not_found(api: Api, owner: Persona) -> None:
    receipt = api.post("/ingest/document", owner, {"document": {"id": "d", "content": "x"}}).json()
    api.post("/source/delete", owner, {"sourceId": receipt["sourceId"], "retireIdentity": True})
    assert error_code(api.post("/source/get", owner, {"sourceId": receipt["sourceId"]})) == "NOT_FOUND"
    assert error_code(api.post("/source/delete", owner, {"sourceId": receipt["sourceId"]})) == "NOT_FOUND"


def test_erasure_needs_the_edit_scope(api: Api, owner: Persona, alice) -> None:
    receipt = api.post("/ingest/document", owner, {"document": {"id": "d", "content": "x"}}).json()
    writer = issue(alice, "writer", scopes=["read", "write"])
    assert error_code(api.post("/source/delete", writer, {"sourceId": receipt["sourceId"]})) == "SCOPE_REQUIRED"
    assert Source.objects.filter(pk=receipt["sourceId"]).exists()


def test_blob_bytes_leave_storage(api: Api, owner: Persona, django_capture_on_commit_callbacks) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    receipt = api.client.post(
        "/ingest/file",
        data={
            "file": SimpleUploadedFile("n.txt", b"lonely bytes", content_type="text/plain"),
            "document": '{"id": "x"}',
        },
        headers=owner.headers,
    ).json()
    name = Blob.objects.get().storage_name
    assert default_storage.exists(name)
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/source/delete", owner, {"sourceId": receipt["sourceId"]})
    assert not Blob.objects.exists()
    assert not default_storage.exists(name)


def test_claims_derived_only_from_an_erased_source_go_with_it(api: Api, owner: Persona, alice) -> None:
    from memory.models import Claim, Evidence
    from tests.factories import ClaimFactory

    first = api.post("/ingest/document", owner, {"document": {"id": "a", "content": f"I love {MARKER}."}}).json()
    second = api.post("/ingest/document", owner, {"document": {"id": "b", "content": "Other notes."}}).json()
    only = ClaimFactory.create(owner=alice, statement=f"Loves {MARKER}.")
    both = ClaimFactory.create(owner=alice, statement="Keeps notes.")
    Evidence.objects.create(owner=alice, claim=only, source_id=first["sourceId"], excerpt=f"I love {MARKER}.")
    Evidence.objects.create(owner=alice, claim=both, source_id=first["sourceId"], excerpt="I love")
    Evidence.objects.create(owner=alice, claim=both, source_id=second["sourceId"], excerpt="Other notes.")
    api.post("/source/delete", owner, {"sourceId": first["sourceId"]})
    assert list(Claim.objects.values_list("statement", flat=True)) == ["Keeps notes."]
    assert list(Evidence.objects.values_list("source_id", flat=True)) == [second["sourceId"]]
    assert tables_containing(MARKER) == []


@pytest.mark.parametrize("retire", [False, True])
def test_erasing_a_turn_removes_its_text_from_the_turns_after_it(api: Api, owner: Persona, retire: bool) -> None:
    """The turns after a message carry the end of it in their chunks' context (found by it) and lean towards it in
    their vectors: erased, it leaves those too, and they are embedded again without it."""
    turns = [f"The alarm code is {MARKER}.", "Noted, I will remember.", "And the spare key is in the shed.", "Okay."]
    messages = [{"id": f"m{n}", "role": "user", "content": text} for n, text in enumerate(turns)]
    receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": "chat", "messages": messages}}).json()
    run_operation(receipt["operationId"])
    erased = Source.objects.get(kind="message", message_id="m0")
    after = Chunk.objects.filter(source__message_id__in=["m1", "m2"])
    assert all(MARKER in chunk.context for chunk in after) and all(chunk.embedding is not None for chunk in after)
    response = api.post("/source/delete", owner, {"sourceId": erased.pk, "retireIdentity": retire})
    assert response.status_code == 200, response.content
    assert tables_containing(MARKER) == []
    follow = Chunk.objects.get(source__message_id="m1")
    assert follow.embedding is None and follow.embedding_model == ""  # a worker makes it again (below)
    assert "Noted" in Chunk.objects.get(source__message_id="m2").context  # the turns still before it stay
    assert Chunk.objects.get(source__message_id="m3").embedding is not None  # past the context: untouched


def test_the_turns_after_an_erased_message_are_embedded_again_from_their_new_context(
    api: Api, owner: Persona, django_capture_on_commit_callbacks: Any
) -> None:
    turns = [f"The alarm code is {MARKER}.", "Noted, I will remember.", "And the spare key is in the shed.", "Okay."]
    messages = [{"id": f"m{n}", "role": "user", "content": text} for n, text in enumerate(turns)]
    receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": "chat", "messages": messages}}).json()
    run_operation(receipt["operationId"])
    before = {chunk.pk: list(chunk.embedding) for chunk in Chunk.objects.filter(source__message_id__in=["m1", "m2"])}
    erased = Source.objects.get(kind="message", message_id="m0")
    with django_capture_on_commit_callbacks() as sent:  # the erasure's follow-up job, sent once it commits
        assert api.post("/source/delete", owner, {"sourceId": erased.pk}).status_code == 200
    jobs = [call.args[0] for call in sent if getattr(call, "func", None) is send_chunk_vectors_job]
    assert [sorted(ids) for ids in jobs] == [sorted(before)]
    embed_chunks(jobs[0])  # what the worker runs
    for chunk in Chunk.objects.filter(pk__in=list(before)).only(*CHUNK_VECTOR_FIELDS, "embedding"):
        # The vector the chunk's own recipe makes from its context now: the erased turn's text is not in it.
        recipe = chunk_recipes([chunk], in_order=False)[0]
        texts = recipe_texts([recipe])
        by_text = dict(zip(texts, get_embedder().embed_documents(texts), strict=True))
        assert list(chunk.embedding) == pytest.approx(blended(recipe, by_text), abs=1e-6)
    # The turn right after leaned towards the erased one; it no longer does.
    next_turn = Chunk.objects.get(source__message_id="m1")
    assert list(next_turn.embedding) != pytest.approx(before[next_turn.pk], abs=1e-3)


def test_a_vector_made_from_a_context_an_erasure_has_changed_since_is_not_stored(api: Api, owner: Persona) -> None:
    """A worker embedding a turn while an erasure gives it a new context: its vector leans towards the erased
    text, and is dropped; the erasure's follow-up makes the new one."""
    turns = ["Lotte plays the cello.", f"Her teacher is {MARKER}.", "She practises daily."]
    messages = [{"id": f"m{n}", "role": "user", "content": text} for n, text in enumerate(turns)]
    receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": "chat", "messages": messages}}).json()
    run_operation(receipt["operationId"])
    last = Chunk.objects.filter(source__message_id="m2")
    last.update(embedding=None, embedding_model="")
    read = list(last.only(*CHUNK_VECTOR_FIELDS))  # what a worker read before the erasure
    assert MARKER in read[0].context
    erased = Source.objects.get(kind="message", message_id="m1")
    assert api.post("/source/delete", owner, {"sourceId": erased.pk}).status_code == 200
    assert chunks_embed(read, get_embedder()) == 0
    assert last.get().embedding is None
    assert chunks_embed_missing([read[0].pk], get_embedder()) == 1
    assert last.get().embedding is not None and MARKER not in last.get().context
    assert tables_containing(MARKER) == []


def test_a_turn_erased_while_the_next_receipts_job_embeds_is_not_in_the_new_turns_context(
    api: Api, owner: Persona, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunk step drafts a receipt's new turns, with the turns before them as context, and embeds them before it
    holds the conversation's row; an erasure of one of those earlier turns meanwhile must not be in what it stores."""
    first = [{"id": "m0", "role": "user", "content": "Lotte plays the cello."},
             {"id": "m1", "role": "user", "content": f"Her teacher is {MARKER}."}]  # fmt: skip
    receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": "chat", "messages": first}}).json()
    run_operation(receipt["operationId"])
    later = [*first, {"id": "m2", "role": "user", "content": "She practises every day."}]
    receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": "chat", "messages": later}}).json()
    erased = Source.objects.get(kind="message", message_id="m1")
    embedded = steps._chunk_vectors

    def embedded_then_erased(job: Any, planned: Any) -> Any:
        assert any(MARKER in draft.context for _, drafts in planned[1] for draft in drafts)  # drafted with m1
        vectors = embedded(job, planned)
        api.post("/source/delete", owner, {"sourceId": erased.pk})  # before the job holds the conversation's row
        return vectors

    monkeypatch.setattr(steps, "_chunk_vectors", embedded_then_erased)
    run_operation(receipt["operationId"])
    new_turn = Chunk.objects.get(source__message_id="m2")
    assert "Lotte" in new_turn.context and MARKER not in new_turn.context
    assert new_turn.embedding is not None  # made from the new context (the one made ahead was for the old)
    assert tables_containing(MARKER) == []

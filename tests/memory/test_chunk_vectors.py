"""A chunk is written once, with its vector (issue 18): the vector used to come in an UPDATE after the INSERT, a
second row version and a second entry in every index of the row (the HNSW one the dearest)."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.embeddings import get_embedder
from memory.models import Chunk, Source
from memory.pipeline.runner import run_operation
from memory.services.embeddings import vectors_sweep
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db


def _processed(api: Api, owner: Persona, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    receipt = api.post(path, owner, body).json()
    with CaptureQueriesContext(connection) as queries:
        run_operation(receipt["operationId"])
    captured = list(queries.captured_queries)  # the next request resets the connection's query log
    done = api.post("/source/processing/get", owner, {"operationId": receipt["operationId"]}).json()
    assert done["status"] == "completed", done
    return captured


def _chunk_updates(queries: list[dict[str, Any]]) -> list[str]:
    return [query["sql"] for query in queries if re.match(r'UPDATE "?memory_chunk"? ', query["sql"], re.IGNORECASE)]


def _made_from(own: str, before: str = "") -> list[float]:
    """The vector of `own`, leaning towards `before` by half its weight (written out here, not the service's)."""
    embedder = get_embedder()
    if not before:
        return embedder.embed_documents([own])[0]
    own_vector, before_vector = embedder.embed_documents([own, before])
    mixed = [a + 0.5 * b for a, b in zip(own_vector, before_vector, strict=True)]
    norm = math.sqrt(sum(value * value for value in mixed))
    return [value / norm for value in mixed]


def _assert_vector(chunk: Chunk, expected: list[float]) -> None:
    assert chunk.embedding_model == get_embedder().model_id
    assert chunk.embedding is not None
    cosine = sum(a * b for a, b in zip(chunk.embedding, expected, strict=True))
    assert math.isclose(cosine, 1.0, abs_tol=1e-4), (chunk.text, cosine)


def test_the_chunks_of_new_messages_are_inserted_with_their_vectors(api: Api, owner: Persona) -> None:
    turns = [
        ("user", "I'll plan the garden on Friday."),
        ("assistant", "Noted: the garden on Friday."),
        ("user", "Also, my sister Lotte lives in Utrecht."),
    ]
    messages = [
        {"id": f"m{n}", "role": role, "content": text, "timestamp": f"2026-04-22T10:0{n}:00Z"}
        for n, (role, text) in enumerate(turns, start=1)
    ]
    queries = _processed(api, owner, "/ingest/conversation", {"conversation": {"id": "c", "messages": messages}})
    assert _chunk_updates(queries) == []
    chunks = list(Chunk.objects.order_by("authored_at"))
    assert [chunk.message_id for chunk in chunks] == ["m1", "m2", "m3"]
    # A role names no one: a turn's own text is its words; from the second turn on it leans towards the one before.
    _assert_vector(chunks[0], _made_from(turns[0][1]))
    _assert_vector(chunks[1], _made_from(turns[1][1], turns[0][1]))
    _assert_vector(chunks[2], _made_from(turns[2][1], turns[1][1]))

    # The next turn's job embeds only its own new chunk, with the turns before it as context; the turn before is
    # not in this job, so the vector leans towards the end of the context (what the turn before ended with).
    later = {"id": "m4", "role": "user", "content": "I finished the garden plan.", "timestamp": "2026-04-22T10:03:00Z"}
    queries = _processed(api, owner, "/ingest/conversation", {"conversation": {"id": "c", "messages": [later]}})
    assert _chunk_updates(queries) == []
    chunks = list(Chunk.objects.order_by("authored_at"))
    assert len(chunks) == 4 and "garden on Friday" in chunks[3].context
    assert chunks[3].context.endswith("Also, my sister Lotte lives in Utrecht.")
    _assert_vector(chunks[3], _made_from(later["content"], chunks[3].context[-48:]))


def test_a_document_is_chunked_with_its_vectors_in_one_write(api: Api, owner: Persona) -> None:
    text = "\n\n".join(f"Paragraph {n} about the quarterly planning of the garden project." * 8 for n in range(6))
    queries = _processed(api, owner, "/ingest/document", {"document": {"id": "d", "content": text}})
    assert _chunk_updates(queries) == []
    chunks = list(Chunk.objects.filter(source=Source.objects.get(kind="document")).order_by("ordinal"))
    assert len(chunks) > 1
    for chunk in chunks:  # no title: each is its own text alone
        _assert_vector(chunk, _made_from(chunk.text))


def test_a_turn_is_embedded_as_its_speakers_name_and_its_text_leaning_towards_the_turn_before(
    api: Api, owner: Persona
) -> None:
    """The turns before a message are its keyword context, not part of the text embedded (issue 18: that was a
    fifth of the embedding time per message); its vector leans towards the turn before's own vector instead."""
    messages = [
        {"id": "m1", "role": "user", "speaker": "Caroline", "content": "Did you go to the lake last weekend?"},
        {"id": "m2", "role": "other", "speaker": "Melanie", "content": "Yes, we camped there with the kids."},
        {"id": "m3", "role": "assistant", "content": "That sounds like a lovely trip."},
    ]
    _processed(api, owner, "/ingest/conversation", {"conversation": {"id": "c", "messages": messages}})
    chunks = {chunk.message_id: chunk for chunk in Chunk.objects.all()}
    assert "lake last weekend" in chunks["m2"].context  # still found by the words of the turn before
    assert chunks["m2"].embedding_text == "Melanie:\nYes, we camped there with the kids."
    assert chunks["m3"].embedding_text == "That sounds like a lovely trip."
    _assert_vector(chunks["m1"], _made_from("Caroline:\nDid you go to the lake last weekend?"))
    _assert_vector(chunks["m2"], _made_from(chunks["m2"].embedding_text, chunks["m1"].embedding_text))
    _assert_vector(chunks["m3"], _made_from(chunks["m3"].embedding_text, chunks["m2"].embedding_text))


def test_a_turn_swept_later_leans_towards_the_end_of_the_turns_before_it(api: Api, owner: Persona) -> None:
    messages = [
        {"id": "m1", "role": "user", "speaker": "Caroline", "content": "Did you go to the lake last weekend?"},
        {"id": "m2", "role": "other", "speaker": "Melanie", "content": "Yes, we camped there with the kids."},
    ]
    _processed(api, owner, "/ingest/conversation", {"conversation": {"id": "c", "messages": messages}})
    Chunk.objects.update(embedding=None, embedding_model="")
    with CaptureQueriesContext(connection) as queries:
        assert vectors_sweep(get_embedder())["chunks"] == 2
    # The chunks and every field their recipes read in one query (a deferred `speaker` would be one per chunk).
    assert len([q for q in queries.captured_queries if re.match(r'SELECT .* FROM "memory_chunk"', q["sql"])]) == 1
    chunk = Chunk.objects.get(message_id="m2")
    # Its context is "Did you go to the lake last weekend? Melanie:": the name is its own, not the turn before's.
    assert chunk.turn_before == "Did you go to the lake last weekend?"
    _assert_vector(chunk, _made_from("Melanie:\nYes, we camped there with the kids.", chunk.turn_before))


def test_a_document_chunk_is_embedded_with_its_title(api: Api, owner: Persona) -> None:
    document = {"id": "d", "title": "Garden plan 2026", "content": "Plant the tomatoes after the last frost."}
    _processed(api, owner, "/ingest/document", {"document": document})
    chunk = Chunk.objects.get()
    assert chunk.embedding_text == "Garden plan 2026\nPlant the tomatoes after the last frost."
    _assert_vector(chunk, _made_from(chunk.embedding_text))


def test_a_turn_longer_than_two_kilobytes_keeps_its_vector_and_words_in_the_row(api: Api, owner: Persona) -> None:
    """Search reads every candidate's vector and tsvector: kept in the row, not in the TOAST table, where each
    would cost a lookup in its index (issue 18). A turn with context is about 3 kB: past the 2 kB at which
    PostgreSQL moves values out, unless the table says otherwise (migration 0025)."""
    sentence = "We talked about the {} garden, the allotment by the canal and the tomatoes that never ripened. "
    messages = [
        {"id": f"m{n}", "role": "user", "content": sentence.format(n) * 4, "timestamp": f"2026-04-22T10:0{n}:00Z"}
        for n in range(1, 5)
    ]
    _processed(api, owner, "/ingest/conversation", {"conversation": {"id": "c", "messages": messages}})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_size(c.*), pg_column_toast_chunk_id(embedding), pg_column_toast_chunk_id(search_vector)"
            " FROM memory_chunk c ORDER BY authored_at"
        )
        rows = cursor.fetchall()
    assert len(rows) == 4
    assert all(size > 2100 for size, _, _ in rows[1:]), rows  # rows that would have been toasted
    assert [(vector, words) for _, vector, words in rows] == [(None, None)] * 4


@pytest.mark.parametrize("table", ["memory_chunk", "memory_claim", "memory_node"])
def test_the_tables_searched_by_vector_keep_rows_whole_up_to_a_page(table: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.reloptions, a.attstorage FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
            " WHERE c.relname = %s AND a.attname = 'embedding'",
            [table],
        )
        options, storage = cursor.fetchone()
    assert "toast_tuple_target=8160" in options
    assert storage == "m"  # the vector is the last value moved out of a row longer than a page

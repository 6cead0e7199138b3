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


def _assert_embedded_as_their_text(chunks: list[Chunk]) -> None:
    embedder = get_embedder()
    expected = embedder.embed_documents([chunk.embedding_text for chunk in chunks])
    for chunk, vector in zip(chunks, expected, strict=True):
        assert chunk.embedding_model == embedder.model_id
        assert chunk.embedding is not None
        cosine = sum(a * b for a, b in zip(chunk.embedding, vector, strict=True))
        assert math.isclose(cosine, 1.0, abs_tol=1e-4), chunk.text


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
    _assert_embedded_as_their_text(chunks)

    # The next turn's job embeds only its own new chunk, with the turns before it as context.
    later = {"id": "m4", "role": "user", "content": "I finished the garden plan.", "timestamp": "2026-04-22T10:03:00Z"}
    queries = _processed(api, owner, "/ingest/conversation", {"conversation": {"id": "c", "messages": [later]}})
    assert _chunk_updates(queries) == []
    chunks = list(Chunk.objects.order_by("authored_at"))
    assert len(chunks) == 4 and "garden on Friday" in chunks[3].context
    _assert_embedded_as_their_text(chunks)


def test_a_document_is_chunked_with_its_vectors_in_one_write(api: Api, owner: Persona) -> None:
    text = "\n\n".join(f"Paragraph {n} about the quarterly planning of the garden project." * 8 for n in range(6))
    queries = _processed(api, owner, "/ingest/document", {"document": {"id": "d", "content": text}})
    assert _chunk_updates(queries) == []
    chunks = list(Chunk.objects.filter(source=Source.objects.get(kind="document")).order_by("ordinal"))
    assert len(chunks) > 1
    _assert_embedded_as_their_text(chunks)

"""Embedding helpers: vectors for a batch of rows, the per-owner follow-up after a write and the beat sweep.
Status and reindex over every vector kind are maintenance/vectors.py."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Model, Q

from memory.embeddings import Embedder, EmbedderUnavailable
from memory.models import Chunk, Claim, Node

logger = logging.getLogger("memory.embeddings")
RowT = TypeVar("RowT", Chunk, Claim, Node)


def vectors_store(model: type[Model], rows: Sequence[Model], texts: list[str], embedder: Embedder) -> int:
    """Embed one batch of texts and store the vectors on their rows. Raises EmbedderUnavailable."""
    if not rows:
        return 0
    vectors = embedder.embed_documents(texts)
    if len(vectors) != len(rows):
        raise ValueError("the embedder returned a different number of vectors")
    # One UPDATE for the batch: Django's bulk_update builds a CASE per row, several times slower for vectors.
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {model._meta.db_table} AS row SET embedding = batch.vector::vector, embedding_model = %s "  # noqa: S608 (table name from the model; values are parameters)
            "FROM unnest(%s::text[], %s::text[]) AS batch(id, vector) WHERE row.id = batch.id",
            [embedder.model_id, [row.pk for row in rows], [_literal(vector) for vector in vectors]],
        )
    for row, vector in zip(rows, vectors, strict=True):
        row.embedding, row.embedding_model = vector, embedder.model_id  # type: ignore[attr-defined]
    return len(rows)


@dataclass(frozen=True)
class Vectors:
    """Vectors embedded before the caller took its locks, by text, and the model that made them. `failed`: the
    embedder was unavailable, so no text has one (the sweep and `embeddings reindex` fill them later)."""

    by_text: dict[str, list[float]]
    model_id: str
    failed: bool = False


def texts_embed(texts: list[str], *, event: str) -> Vectors:
    """The vectors of these texts (each distinct text once; the embedder batches them itself). Call it before
    taking a lock: a slow or down embedder then holds none. Unavailable: logged as `event`, and `failed`."""
    from memory.embeddings import get_embedder

    distinct = list(dict.fromkeys(texts))
    if not distinct:
        return Vectors({}, "")
    try:
        embedder = get_embedder()
        return Vectors(dict(zip(distinct, embedder.embed_documents(distinct), strict=True)), embedder.model_id)
    except EmbedderUnavailable as exc:
        logger.warning(event, extra={"reason": str(exc), "texts": len(distinct)})
        return Vectors({}, "", failed=True)


def chunks_embed(chunks: list[Chunk], embedder: Embedder) -> int:
    """Vectors for chunks, made from their context and text (one batch)."""
    return vectors_store(Chunk, chunks, [chunk.embedding_text for chunk in chunks], embedder)


def nodes_embed(nodes: list[Node], embedder: Embedder) -> int:
    """Vectors for node cards ("Person: Marcel. summary"), one batch."""
    return vectors_store(Node, nodes, [node.card for node in nodes], embedder)


def claims_embed(claims: list[Claim], embedder: Embedder) -> int:
    """Vectors for claim statements, one batch."""
    return vectors_store(Claim, claims, [claim.statement for claim in claims], embedder)


def embed_pending(owner_id: int, embedder: Embedder, *, limit: int = 500) -> dict[str, int]:
    """Vectors for this owner's current claims and nodes that lack one of the active model (written through
    the API: saved memories, corrections, renamed nodes). Raises EmbedderUnavailable."""
    stale = stale_vectors(embedder.model_id)
    claims = list(
        Claim.objects.filter(stale, owner_id=owner_id, status__in=["active", "suggested", "quarantined"]).only(
            "id", "statement"
        )[:limit]
    )
    nodes = list(
        Node.objects.filter(stale, owner_id=owner_id, merged_into__isnull=True).only("id", "type", "label", "summary")[
            :limit
        ]
    )
    return {"claims": claims_embed(claims, embedder), "nodes": nodes_embed(nodes, embedder)}


def vectors_sweep(embedder: Embedder, *, limit: int = 500) -> dict[str, int]:
    """Vectors of the active model for rows of every owner that lack one: current claims, live nodes, chunks of
    live sources (written while the queue or the embedder was down, or made by another model). At most `limit`
    of each per run, in batches; beat runs it every few minutes. Raises EmbedderUnavailable."""
    stale = stale_vectors(embedder.model_id)
    claims = Claim.objects.filter(stale, status__in=["active", "suggested", "quarantined"]).only("id", "statement")
    nodes = Node.objects.filter(stale, merged_into__isnull=True).only("id", "type", "label", "summary")
    chunks = Chunk.objects.filter(stale, source__tombstoned_at__isnull=True).only("id", "text", "context")
    done = {
        "claims": _in_batches(list(claims.order_by("id")[:limit]), claims_embed, embedder),
        "nodes": _in_batches(list(nodes.order_by("id")[:limit]), nodes_embed, embedder),
        "chunks": _in_batches(list(chunks.order_by("id")[:limit]), chunks_embed, embedder),
    }
    if any(done.values()):
        logger.info("embeddings.swept", extra=done)
    return done


def _in_batches(rows: list[RowT], embed: Callable[[list[RowT], Embedder], int], embedder: Embedder) -> int:
    size = max(1, settings.EMBEDDING_BATCH_SIZE)
    return sum(embed(rows[start : start + size], embedder) for start in range(0, len(rows), size))


def vectors_follow(owner_id: int) -> None:
    """After this transaction commits, a worker embeds what it wrote (the write itself never waits for it).
    If the queue is down the write still stands: the beat sweep (`vectors_sweep`) embeds it later."""
    transaction.on_commit(lambda: _send_embed_job(owner_id))


def _send_embed_job(owner_id: int) -> None:
    from memory.tasks import embed_pending_vectors

    try:
        # No publish retries: with the broker down the answer must not wait; the sweep covers it.
        embed_pending_vectors.apply_async(args=(owner_id,), retry=False)
    except Exception:  # the broker is unreachable: the committed write must not turn into an error
        logger.warning("embeddings.dispatch_failed", extra={"ownerId": owner_id}, exc_info=True)


def _literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{value:.7g}" for value in vector) + "]"


def stale_vectors(model_id: str) -> Q:
    """Rows (chunks, claims, nodes, metric definitions) without a vector of the active model (missing, or made
    by another model)."""
    return Q(embedding__isnull=True) | ~Q(embedding_model=model_id)

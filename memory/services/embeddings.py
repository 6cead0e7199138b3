"""Embedding helpers: vectors for a batch of rows, the per-owner follow-up after a write and the beat sweep.
Status and reindex over every vector kind are maintenance/vectors.py."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Model, Q

from config.queue import job_sent, sent_or_owed
from memory.embeddings import Embedder, EmbedderUnavailable
from memory.models import Chunk, Claim, Node
from memory.models.copy_rows import vector_text
from memory.services.audit import memory_changed

if TYPE_CHECKING:
    from celery import Task

logger = logging.getLogger("memory.embeddings")
RowT = TypeVar("RowT", Chunk, Claim, Node)
# A turn's vector leans towards what it follows: its own vector plus this share of the turn before's, normalised.
# A short answer ("Yes, twice!") is about the turn before it. Embedding the end of that turn with every turn
# cost a fifth of the embedding time per message; reusing the turn before's own vector costs nothing, and found
# as much on LoCoMo (docs/benchmarks.md, issue 18).
TURN_BEFORE_WEIGHT = 0.5

# What one chunk's vector is made from: its own text, and the text of what it leans towards ("" for nothing).
Recipe = tuple[str, str]
# The fields of a chunk its recipe reads (load them with `.only(*CHUNK_VECTOR_FIELDS)`).
CHUNK_VECTOR_FIELDS = ("id", "text", "context", "speaker")


def chunk_recipes(chunks: Sequence[Chunk], *, in_order: bool) -> list[Recipe]:
    """The recipe of each chunk's vector. A turn leans towards the chunk before it when `in_order` says the chunks
    are one job's turns in order (that chunk's own text is embedded anyway), else towards the end of the turns
    before it, kept in its context. Anything else (a document's chunks) is its own text alone."""
    recipes = []
    for index, chunk in enumerate(chunks):
        if not chunk.speaker:
            before = ""
        elif in_order and index > 0:
            before = chunks[index - 1].embedding_text
        else:
            before = chunk.turn_before
        recipes.append((chunk.embedding_text, before))
    return recipes


def recipe_texts(recipes: list[Recipe]) -> list[str]:
    """Every text the recipes need embedded, each once."""
    return list(dict.fromkeys(text for recipe in recipes for text in recipe if text))


def blended(recipe: Recipe, by_text: dict[str, list[float]]) -> list[float] | None:
    """The vector a recipe makes from the vectors of its texts; None if one of them has none."""
    own_text, before_text = recipe
    own = by_text.get(own_text)
    if own is None or not before_text:
        return own
    before = by_text.get(before_text)
    if before is None:
        return None
    mixed = [a + TURN_BEFORE_WEIGHT * b for a, b in zip(own, before, strict=True)]
    norm = math.sqrt(sum(value * value for value in mixed)) or 1.0
    return [value / norm for value in mixed]


def vectors_store(model: type[Model], rows: Sequence[Model], texts: list[str], embedder: Embedder) -> int:
    """Embed one batch of texts and store the vectors on their rows. Raises EmbedderUnavailable."""
    if not rows:
        return 0
    vectors = embedder.embed_documents(texts)
    if len(vectors) != len(rows):
        raise ValueError("the embedder returned a different number of vectors")
    return vectors_write(model, rows, vectors, embedder.model_id)


_SEARCHED = (Claim, Chunk, Node)  # the corpora a search ranks by vector (memory.recall.corpora)


def vectors_write(
    model: type[Model], rows: Sequence[Model], vectors: list[list[float]], model_id: str, *, made_from: str = ""
) -> int:
    """Store these vectors, made by `model_id`, on their rows; how many were stored. `made_from`: a column the
    vectors were made from (a chunk's `context`): a row whose value changed since keeps no vector. An erasure gives
    the turns after a message a new context (memory.services.erasure) while a worker may be embedding them with the
    old one, which leans towards the erased text; the erasure's own follow-up (`chunk_vectors_follow`) makes the
    new one."""
    table = model._meta.db_table
    batch, same = "batch(id, vector)", ""
    values: list[Any] = [model_id, [row.pk for row in rows], [vector_text(vector) for vector in vectors]]
    if made_from:
        batch, same = "batch(id, vector, made_from)", f" AND row.{made_from} = batch.made_from"
        values.append([getattr(row, made_from) for row in rows])
    arrays = ", ".join(["%s::text[]"] * (len(values) - 1))
    # One UPDATE for the batch: Django's bulk_update builds a CASE per row, several times slower for vectors.
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS row SET embedding = batch.vector::vector, embedding_model = %s "  # noqa: S608 (table and column names from the code; values are parameters)
            f"FROM unnest({arrays}) AS {batch} WHERE row.id = batch.id{same} RETURNING row.id, row.owner_id",
            values,
        )
        stored = dict(cursor.fetchall())
    if model in _SEARCHED:
        # Searches read these vectors, and a copy of them held at the memory version (memory.recall.held_vectors)
        # must not outlive them: a row embedded after its write moved the version on moves it again.
        for owner_id in set(stored.values()):
            memory_changed(owner_id)
    for row, vector in zip(rows, vectors, strict=True):
        if row.pk in stored:
            row.embedding, row.embedding_model = vector, model_id  # type: ignore[attr-defined]
    return len(stored)


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
    """Vectors for chunks found without one (one batch): each turn leans towards the end of the turns before it."""
    if not chunks:
        return 0
    recipes = chunk_recipes(chunks, in_order=False)
    texts = recipe_texts(recipes)
    by_text = dict(zip(texts, embedder.embed_documents(texts), strict=True))
    made = [(chunk, blended(recipe, by_text)) for chunk, recipe in zip(chunks, recipes, strict=True)]
    kept = [(chunk, vector) for chunk, vector in made if vector is not None]  # all of them: every text is embedded
    chunks, vectors = [chunk for chunk, _ in kept], [vector for _, vector in kept]
    return vectors_write(Chunk, chunks, vectors, embedder.model_id, made_from="context")


def chunks_embed_missing(chunk_ids: list[str], embedder: Embedder) -> int:
    """Vectors for these chunks, those of live sources still without one of the active model. Raises
    EmbedderUnavailable."""
    live = Chunk.objects.filter(pk__in=chunk_ids, source__tombstoned_at__isnull=True)
    chunks = live.filter(stale_vectors(embedder.model_id))
    return _in_batches(list(chunks.only(*CHUNK_VECTOR_FIELDS).order_by("id")), chunks_embed, embedder)


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
    chunks = Chunk.objects.filter(stale, source__tombstoned_at__isnull=True).only(*CHUNK_VECTOR_FIELDS)
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


def chunk_vectors_follow(chunk_ids: list[str]) -> None:
    """After this transaction commits, a worker makes the vectors of these chunks (which it left without one);
    if the queue or the embedder is down, the beat sweep makes them later (they are found by keyword meanwhile)."""
    if chunk_ids:
        transaction.on_commit(partial(send_chunk_vectors_job, chunk_ids))


def send_chunk_vectors_job(chunk_ids: list[str]) -> None:
    """Sends the job that makes these chunks' vectors (memory.embed_chunks); never raises."""
    from memory.tasks import embed_chunks

    _send_job(embed_chunks, chunk_ids, about={"chunks": len(chunk_ids)})


def _send_embed_job(owner_id: int) -> None:
    from memory.tasks import embed_pending_vectors

    _send_job(embed_pending_vectors, owner_id, about={"ownerId": owner_id})


def _send_job(task: Task, *args: Any, about: dict[str, Any]) -> None:
    try:
        # No publish retries: with the broker down the answer must not wait. Sent once Redis answers again, or by the
        # sweep (rows without a vector).
        if not sent_or_owed(("job", task.name, repr(args)), partial(job_sent, task, args=args)):
            logger.warning("embeddings.dispatch_failed", extra={**about, "error": "Redis not answering"})
    except Exception:  # the broker failed otherwise: the committed write must not turn into an error
        logger.warning("embeddings.dispatch_failed", extra=about, exc_info=True)


def stale_vectors(model_id: str) -> Q:
    """Rows (chunks, claims, nodes, metric definitions) without a vector of the active model (missing, or made
    by another model)."""
    return Q(embedding__isnull=True) | ~Q(embedding_model=model_id)


# The models chunks' vectors were made by ("" while a chunk waits for its vector): a walk of the index on (owner,
# model), one probe a pair, where a DISTINCT reads every chunk (137 -> 0.3 ms at 300,000 chunks).
CHUNK_MODELS_IN_USE = """
    WITH RECURSIVE pair AS (
        (SELECT owner_id, embedding_model FROM memory_chunk ORDER BY owner_id, embedding_model LIMIT 1)
        UNION ALL
        SELECT later.owner_id, later.embedding_model FROM pair, LATERAL (
            SELECT chunk.owner_id, chunk.embedding_model FROM memory_chunk chunk
            WHERE (chunk.owner_id, chunk.embedding_model) > (pair.owner_id, pair.embedding_model)
            ORDER BY chunk.owner_id, chunk.embedding_model LIMIT 1
        ) later
    )
    SELECT embedding_model FROM pair
"""


def chunk_models_in_use() -> list[str]:
    """Every model some chunk's vector was made by, every owner's (the admin's filter), "" among them while a chunk
    waits for its vector; once per owner using it."""
    with connection.cursor() as cursor:
        cursor.execute(CHUNK_MODELS_IN_USE)
        return [model for (model,) in cursor.fetchall()]

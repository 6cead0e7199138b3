"""Vector upkeep over every kind of row that carries an embedding: chunks, claims, nodes, metric definitions.

`vectors_status` counts each kind's rows by the model of their vector (the active model, other models, none).
`vectors_reindex` gives a vector of the active model to rows that lack one (missing, or made by another model),
one batch at a time: each batch is one UPDATE committed on its own, and a row needs a vector exactly while it
is stale, so an interrupted run leaves nothing half done and the next run simply continues with what is still
stale (no cursor or progress state to corrupt). Nothing is ever deleted. It is throttled by `batch_size`, a
`pause_s` between batches and a `limit` per call (a client loops while `remaining > 0`).

Which rows need a vector and what text it is made from is `KINDS`, the one list of them; the beat sweep of
memory.services.embeddings (claims, nodes, chunks, a few hundred per run) embeds with the same helpers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import BooleanField, Count, ExpressionWrapper, Model, Q, QuerySet

from memory.access import Access
from memory.embeddings import Embedder, EmbedderUnavailable, get_embedder
from memory.errors import ServiceError
from memory.models import Chunk, Claim, Node, Scope
from memory.services.embeddings import (
    CHUNK_VECTOR_FIELDS,
    chunks_embed,
    claims_embed,
    nodes_embed,
    stale_vectors,
    vectors_store,
)
from metrics.models import MetricDefinition

logger = logging.getLogger("maintenance.vectors")
NO_MODEL = "(none)"


@dataclass(frozen=True)
class VectorKind:
    name: str  # claims | nodes | metrics | chunks
    model: type[Model]
    live: Q  # the rows search can reach: only these need a vector
    fields: tuple[str, ...]  # what `embed` reads
    embed: Callable[[list[Any], Embedder], int]


def metrics_embed(definitions: list[MetricDefinition], embedder: Embedder) -> int:
    """Vectors of metric cards (label, unit, description), as metrics.services makes them on creation."""
    return vectors_store(MetricDefinition, definitions, [definition.card for definition in definitions], embedder)


# Claims and nodes first: they are what recall answers with; chunks are the most numerous.
KINDS: tuple[VectorKind, ...] = (
    VectorKind(
        "claims", Claim, Q(status__in=["active", "suggested", "quarantined"]), ("id", "statement"), claims_embed
    ),
    VectorKind("nodes", Node, Q(merged_into__isnull=True), ("id", "type", "label", "summary"), nodes_embed),
    VectorKind("metrics", MetricDefinition, Q(), ("id", "label", "unit", "description"), metrics_embed),
    VectorKind("chunks", Chunk, Q(source__tombstoned_at__isnull=True), CHUNK_VECTOR_FIELDS, chunks_embed),
)
KIND_NAMES = tuple(kind.name for kind in KINDS)


def _rows(kind: VectorKind, owner_id: int | None, partition_ids: list[str] | None) -> QuerySet[Any]:
    rows = kind.model.objects.filter(kind.live)  # type: ignore[attr-defined]
    if owner_id is not None:
        rows = rows.filter(owner_id=owner_id)
    if partition_ids is not None:
        rows = rows.filter(partition_id__in=partition_ids)
    return rows


def _kinds(names: list[str] | None) -> list[VectorKind]:
    return [kind for kind in KINDS if names is None or kind.name in names]


@dataclass(frozen=True)
class KindStatus:
    kind: str
    total: int
    current: int  # vectors of the active model
    other_model: int  # vectors of another model: invisible to semantic search until reindexed
    missing: int  # no vector at all
    by_model: dict[str, int]

    @property
    def remaining(self) -> int:
        return self.other_model + self.missing


@dataclass(frozen=True)
class VectorStatus:
    model_id: str
    kinds: list[KindStatus]

    @property
    def remaining(self) -> int:
        return sum(kind.remaining for kind in self.kinds)


def vectors_status(
    *, embedder: Embedder, owner_id: int | None = None, partition_ids: list[str] | None = None,
    kinds: list[str] | None = None,
) -> VectorStatus:  # fmt: skip
    """Each kind's rows (everyone's, or one owner's in the given partitions) by the model of their vector."""
    found = []
    for kind in _kinds(kinds):
        counted = (
            _rows(kind, owner_id, partition_ids)
            .values(
                "embedding_model", has_vector=ExpressionWrapper(Q(embedding__isnull=False), output_field=BooleanField())
            )
            .annotate(n=Count("id"))
        )
        by_model: dict[str, int] = {}
        current = other = missing = 0
        for row in counted:
            if not row["has_vector"]:
                missing += row["n"]
                by_model[NO_MODEL] = by_model.get(NO_MODEL, 0) + row["n"]
                continue
            name = row["embedding_model"] or NO_MODEL
            by_model[name] = by_model.get(name, 0) + row["n"]
            if row["embedding_model"] == embedder.model_id:
                current += row["n"]
            else:
                other += row["n"]
        total = current + other + missing
        found.append(KindStatus(kind.name, total, current, other, missing, dict(sorted(by_model.items()))))
    return VectorStatus(model_id=embedder.model_id, kinds=found)


@dataclass
class ReindexResult:
    model_id: str
    dry_run: bool
    embedded: dict[str, int] = field(default_factory=dict)  # per kind, by this call (0 in a dry run)
    selected: dict[str, int] = field(default_factory=dict)  # per kind, what this call embeds (or would)
    remaining: dict[str, int] = field(default_factory=dict)  # per kind, still stale after this call

    @property
    def total_embedded(self) -> int:
        return sum(self.embedded.values())

    @property
    def total_remaining(self) -> int:
        return sum(self.remaining.values())


def vectors_reindex(
    *,
    embedder: Embedder,
    batch_size: int,
    owner_id: int | None = None,
    partition_ids: list[str] | None = None,
    kinds: list[str] | None = None,
    limit: int | None = None,
    pause_s: float = 0.0,
    dry_run: bool = False,
    on_batch: Callable[[str, int, int], None] | None = None,
) -> ReindexResult:
    """Embed stale rows (missing or other-model vectors) kind after kind in id order, `batch_size` rows per
    committed UPDATE, at most `limit` rows in all, sleeping `pause_s` between batches. A dry run only counts
    what it would embed. `on_batch(kind, done, stale)` follows progress. Raises EmbedderUnavailable."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    result = ReindexResult(model_id=embedder.model_id, dry_run=dry_run)
    budget = limit
    first_batch = True
    for kind in _kinds(kinds):
        stale_rows = _rows(kind, owner_id, partition_ids).filter(stale_vectors(embedder.model_id))
        stale = stale_rows.count()
        chosen = stale if budget is None else min(stale, budget)
        result.selected[kind.name] = chosen
        done = 0
        last_id = ""
        while not dry_run and done < chosen:
            # Keyset order: a row that stays stale (changed meanwhile) is not taken twice in one run.
            batch = list(
                stale_rows.filter(id__gt=last_id).order_by("id").only(*kind.fields)[: min(batch_size, chosen - done)]
            )
            if not batch:
                break
            if not first_batch and pause_s > 0:
                time.sleep(pause_s)  # throttle: leave the embedder and the database to others between batches
            first_batch = False
            done += kind.embed(batch, embedder)
            last_id = batch[-1].pk
            if on_batch is not None:
                on_batch(kind.name, done, stale)
        result.embedded[kind.name] = done
        result.remaining[kind.name] = stale - done
        if budget is not None:
            budget -= chosen
    if not dry_run:
        logger.info(
            "maintenance.vectors_reindexed",
            extra={"model": embedder.model_id, "ownerId": owner_id, "embedded": result.embedded,
                   "remaining": result.total_remaining},
        )  # fmt: skip
    return result


def memory_vectors_status(*, access: Access, kinds: list[str] | None = None) -> VectorStatus:
    """`vectors_status` of the memory this request reaches (needs `read`): what REST, MCP and the UI show."""
    access.require_scope(Scope.READ)
    with _embedder_refusal():
        return vectors_status(
            embedder=get_embedder(), owner_id=access.user.pk, partition_ids=access.read_partition_ids, kinds=kinds
        )


def memory_reindex(
    *, access: Access, limit: int, kinds: list[str] | None = None, dry_run: bool = False
) -> ReindexResult:
    """`vectors_reindex` of the memory this request reaches, at most `limit` rows (a dry run needs `read`,
    applying `maintenance`). With the embedder down: EMBEDDER_UNAVAILABLE; the batches done stay committed."""
    access.require_scope(Scope.READ if dry_run else Scope.MAINTENANCE)
    with _embedder_refusal():
        return vectors_reindex(
            embedder=get_embedder(), batch_size=max(1, settings.EMBEDDING_BATCH_SIZE), owner_id=access.user.pk,
            partition_ids=access.read_partition_ids, kinds=kinds, limit=limit, dry_run=dry_run,
        )  # fmt: skip


@contextmanager
def _embedder_refusal() -> Iterator[None]:
    try:
        yield
    except EmbedderUnavailable as exc:
        raise ServiceError(f"The embedder is unavailable: {exc}", code="EMBEDDER_UNAVAILABLE") from exc

"""REST for upkeep: reaping (/maintenance/reap) and vector maintenance (/maintenance/embeddings/*).

Kept apart from maintenance/api.py (pruning, cleanup) so the two can grow without touching each other. Each
endpoint is a thin adapter: validate, check the scope (a preview needs `read`, a change `maintenance`), call
the service in maintenance/reaping.py or maintenance/vectors.py, answer JSON.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from maintenance.reaping import reap
from maintenance.vectors import KIND_NAMES, memory_reindex, memory_vectors_status
from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.openapi import count, flag, many, shape, text, when
from memory.models import Scope

ReapSampleOut = shape(
    "ReapSampleOut", claimId=text(), statement=text(), importance=count(), origin=text(),
    idleSince=when(help_text="Last read, or recorded when never read."),
)  # fmt: skip
ReapOut = shape(
    "ReapOut", dryRun=flag(), candidates=count(help_text="Claims that qualify now, in reach of this token."),
    reaped=count(help_text="Claims this call gave expires_at (0 in a dry run)."),
    maxImportance=count(), afterDays=count(), sample=many(ReapSampleOut),
)  # fmt: skip


class ReapIn(RequestSerializer):
    dryRun = serializers.BooleanField(default=True, help_text="Only count and show a sample (the default).")
    limit = serializers.IntegerField(
        min_value=1, max_value=100_000, default=10_000, help_text="Reap at most this many, longest unread first."
    )
    sample = serializers.IntegerField(min_value=0, max_value=200, default=20, help_text="Claims listed in the answer.")


class MaintenanceReap(Endpoint):
    """Reap unimportant claims nobody reads (seeds/001): active claims of importance at most
    REAP_MAX_IMPORTANCE, not read for REAP_AFTER_DAYS (or never read since recorded then), never pinned, not the
    user's own word (user_stated, manual) and not keyed memories, get expires_at now: they leave recall at once
    and are marked expired by the next lifecycle sweep. Nothing is deleted; each reaped claim is audited.
    A dry run (the default) counts and shows a sample; applying needs `maintenance`. Beat runs it for every user
    every REAP_INTERVAL_HOURS."""

    tool = "maintenance.reap"
    response_schema = ReapOut
    request_serializer = ReapIn
    example_request = {"dryRun": True, "limit": 100}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        access.require_scope(Scope.READ if data["dryRun"] else Scope.MAINTENANCE)
        result = reap(
            owner_id=access.user.pk, partition_ids=access.read_partition_ids, apply=not data["dryRun"],
            limit=data["limit"], sample=data["sample"],
        )  # fmt: skip
        return {
            "dryRun": result.dry_run,
            "candidates": result.candidates,
            "reaped": result.reaped,
            "maxImportance": settings.REAP_MAX_IMPORTANCE,
            "afterDays": settings.REAP_AFTER_DAYS,
            "sample": [
                {
                    "claimId": claim.pk,
                    "statement": claim.statement,
                    "importance": claim.importance,
                    "origin": claim.origin,
                    "idleSince": claim.idle_since,  # type: ignore[attr-defined]
                }
                for claim in result.sample
            ],
        }


KindsField = serializers.ListField(
    child=serializers.ChoiceField(choices=KIND_NAMES), required=False, allow_empty=False, max_length=len(KIND_NAMES),
    help_text="Only these kinds (default: all of claims, nodes, metrics, chunks).",
)  # fmt: skip
KindStatusOut = shape(
    "VectorKindStatusOut", kind=text(), total=count(), current=count(help_text="Vectors of the active model."),
    otherModel=count(help_text="Vectors of another model: not found by semantic search until reindexed."),
    missing=count(), remaining=count(help_text="otherModel + missing"),
    byModel=many(shape("VectorModelCountOut", model=text(), count=count())),
)  # fmt: skip
KindReindexOut = shape("VectorKindReindexOut", kind=text(), selected=count(), embedded=count(), remaining=count())


class VectorStatusIn(RequestSerializer):
    kinds = KindsField


class VectorReindexIn(VectorStatusIn):
    dryRun = serializers.BooleanField(default=True, help_text="Only count what would be re-embedded (the default).")
    limit = serializers.IntegerField(
        min_value=1, max_value=5000, default=500, help_text="Re-embed at most this many rows in this call."
    )


class EmbeddingsStatus(Endpoint):
    """Vector coverage of this memory per kind (claims, nodes, metric definitions, chunks): rows with a vector
    of the active embedding model, of another model (left out of semantic search), and without one.
    After changing the embedding model, `remaining` says how much /maintenance/embeddings/reindex has to do."""

    tool = "maintenance.embeddings_status"
    response_schema = shape(
        "VectorStatusOut", model=text(help_text="The active embedding model."), remaining=count(),
        kinds=many(KindStatusOut),
    )  # fmt: skip
    request_serializer = VectorStatusIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        status = memory_vectors_status(access=access, kinds=data.get("kinds"))
        return {
            "model": status.model_id,
            "remaining": status.remaining,
            "kinds": [
                {
                    "kind": kind.kind,
                    "total": kind.total,
                    "current": kind.current,
                    "otherModel": kind.other_model,
                    "missing": kind.missing,
                    "remaining": kind.remaining,
                    "byModel": [{"model": name, "count": n} for name, n in kind.by_model.items()],
                }
                for kind in status.kinds
            ],
        }


class EmbeddingsReindex(Endpoint):
    """Give rows of this memory a vector of the active embedding model where they lack one or have another
    model's: claims and nodes first, then metric definitions and chunks, at most `limit` rows per call, each
    batch committed on its own (an interrupted call loses nothing; the next continues). Nothing is deleted.
    A dry run (the default) reports what would be re-embedded; applying needs `maintenance`. Call it again
    while `remaining` is above 0."""

    tool = "maintenance.embeddings_reindex"
    response_schema = shape(
        "VectorReindexOut", dryRun=flag(), model=text(),
        selected=count(help_text="Rows this call re-embeds (or would, in a dry run)."),
        embedded=count(), remaining=count(help_text="Rows still without a vector of the active model."),
        kinds=many(KindReindexOut),
    )  # fmt: skip
    request_serializer = VectorReindexIn
    example_request = {"dryRun": True, "limit": 200}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        result = memory_reindex(
            access=access, kinds=data.get("kinds"), limit=data["limit"], dry_run=data["dryRun"]
        )  # fmt: skip
        return {
            "dryRun": result.dry_run,
            "model": result.model_id,
            "selected": sum(result.selected.values()),
            "embedded": result.total_embedded,
            "remaining": result.total_remaining,
            "kinds": [
                {
                    "kind": name,
                    "selected": result.selected[name],
                    "embedded": result.embedded[name],
                    "remaining": result.remaining[name],
                }
                for name in result.selected
            ],
        }

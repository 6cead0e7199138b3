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

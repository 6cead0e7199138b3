"""What is new in memory (seeds/000 `/query/recent-changes`): active claims and nodes added or changed since a
moment, newest last, paged by an opaque (time, id) cursor, each with its provenance so a client needs no
follow-up reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Prefetch

from memory.access import Access
from memory.models import Claim, Evidence, Node, Scope, SourceScope, vector_fields
from memory.paging import decode_time_cursor, encode_cursor
from memory.recall.atlas import current_claims

MAX_LIMIT = 200


@dataclass(frozen=True)
class Change:
    type: str  # claim | node
    id: str
    changed_at: datetime
    data: dict[str, Any]


def _claim_change(claim: Claim) -> Change:
    evidence = list(claim.evidence.all())
    return Change("claim", claim.pk, claim.updated_at, {
        "statement": claim.statement, "kind": claim.kind, "status": claim.status, "pinned": claim.pinned,
        "node": {"nodeId": claim.subject.pk, "type": claim.subject.type, "label": claim.subject.label}
        if claim.subject else None,
        "provenance": {
            "origin": claim.origin, "extractor": claim.extractor, "recordedAt": claim.recorded_at,
            "sources": [{"sourceId": ref.source_id, "messageId": ref.message_id, "excerpt": ref.excerpt}
                        for ref in evidence[:5]],
        },
    })  # fmt: skip


def _node_change(node: Node) -> Change:
    data = {"type": node.type, "label": node.label, "createdAt": node.created_at}
    return Change("node", node.pk, node.updated_at, data)


def recent_changes(
    access: Access, *, since: datetime | None, cursor: str | None, limit: int
) -> tuple[list[Change], str | None]:
    """Changes after `since` (or after the cursor), oldest first: the two streams merged by (time, id)."""
    access.require_scope(Scope.READ)
    limit = max(1, min(limit, MAX_LIMIT))
    after: tuple[datetime, str] | None = decode_time_cursor(cursor) if cursor else None
    claims = (
        current_claims(access)
        .select_related("subject")
        .defer(*vector_fields("subject"))
        .prefetch_related(Prefetch("evidence", queryset=Evidence.objects.order_by("id")))
    )
    nodes = Node.objects.filter(
        owner=access.user, partition__in=access.read_partitions, merged_into__isnull=True,
        scope=SourceScope.PERSONAL,
    ).defer(*vector_fields())  # fmt: skip
    if since is not None:
        claims, nodes = claims.filter(updated_at__gt=since), nodes.filter(updated_at__gt=since)
    if after is not None:
        moment, last_id = after
        claims = claims.filter(updated_at__gte=moment).exclude(updated_at=moment, id__lte=last_id)
        nodes = nodes.filter(updated_at__gte=moment).exclude(updated_at=moment, id__lte=last_id)
    merged = sorted(
        [*(_claim_change(c) for c in claims.order_by("updated_at", "id")[: limit + 1]),
         *(_node_change(n) for n in nodes.order_by("updated_at", "id")[: limit + 1])],
        key=lambda change: (change.changed_at, change.id),
    )  # fmt: skip
    page = merged[:limit]
    next_cursor = encode_cursor(page[-1].changed_at.isoformat(), page[-1].id) if len(merged) > limit else None
    return page, next_cursor

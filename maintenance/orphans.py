"""Orphan nodes: nodes nothing refers to any more. No claim names them (as subject or object, in any state),
no alias names them by anything but their own label (the alias every extracted node gets), and no evidence
stands behind them (no metric observation or metric review points at them).

Never orphans: the self node, merged-away pointers (they exist so old references resolve), and Tasks (a task
with no claims at all is a statusless task: statusless recovery gives it a status to confirm or dismiss).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from maintenance.pruning import MAX_PAGE, Applied, Skipped
from memory.access import Access
from memory.errors import ValidationFailed
from memory.models import Alias, Claim, Node, NodeType, Scope, vector_fields
from memory.names import normalize_name
from memory.paging import decode_cursor, encode_cursor
from memory.services.nodes import node_erase
from metrics.models import MetricDefinition, Observation


def _orphan_rows(access: Access, node_ids: Iterable[str] | None = None) -> QuerySet[Node]:
    """Nodes in reach with no claim, observation or metric review pointing at them (aliases checked after)."""
    nodes = Node.objects.filter(owner=access.user, partition__in=access.read_partitions, is_self=False,
                                merged_into__isnull=True).exclude(type=NodeType.TASK)  # fmt: skip
    if node_ids is not None:
        nodes = nodes.filter(pk__in=list(node_ids))
    return (
        nodes.exclude(Exists(Claim.objects.filter(subject=OuterRef("pk"))))
        .exclude(Exists(Claim.objects.filter(object_node=OuterRef("pk"))))
        .exclude(Exists(Observation.objects.filter(event=OuterRef("pk"))))
        .exclude(Exists(MetricDefinition.objects.filter(review_task=OuterRef("pk"))))
        .select_related("partition")
        .defer(*vector_fields())
        .order_by("pk")
    )


def _without_names_in_use(nodes: list[Node]) -> list[Node]:
    """Those whose aliases only repeat their own label: a name someone taught a node keeps it."""
    taught: dict[str, set[str]] = defaultdict(set)
    for node_id, normalized in Alias.objects.filter(node__in=[node.pk for node in nodes]).values_list(
        "node_id", "normalized"
    ):
        taught[node_id].add(normalized)
    return [node for node in nodes if not (taught[node.pk] - {normalize_name(node.label)})]


def orphans(access: Access, node_ids: Iterable[str] | None = None) -> list[Node]:
    """Every orphan node in the partitions this request reads (or among `node_ids`), in id order."""
    return _without_names_in_use(list(_orphan_rows(access, node_ids)))


@dataclass(frozen=True)
class OrphanPreview:
    candidate_count: int
    nodes: list[Node]
    next_cursor: str | None


def prune_orphans_preview(*, access: Access, limit: int = 50, cursor: str | None = None) -> OrphanPreview:
    """The orphan nodes, in id order, a page at a time."""
    access.require_scope(Scope.READ)
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationFailed("limit is out of range.", details={"limit": [f"From 1 to {MAX_PAGE}."]})
    found = orphans(access)
    after = ""
    if cursor:
        (after,) = decode_cursor(cursor, 1)
        if not isinstance(after, str):
            raise ValidationFailed("The cursor is not valid.", details={"cursor": ["Invalid cursor."]})
    rest = [node for node in found if node.pk > after]
    page = rest[:limit]
    return OrphanPreview(
        candidate_count=len(found), nodes=page, next_cursor=encode_cursor(page[-1].pk) if len(rest) > limit else None
    )


def prune_orphans_apply(*, access: Access, node_ids: list[str] | None = None) -> Applied:
    """Delete orphan nodes: the previewed `node_ids` that are still orphans (the others are skipped with why),
    or, without ids, every orphan there is now (the /cleanup sweep). One transaction per node, audited."""
    access.require_scope(Scope.MAINTENANCE)
    wanted = list(dict.fromkeys(node_ids)) if node_ids is not None else [node.pk for node in orphans(access)]
    deleted: list[str] = []
    skipped: list[Skipped] = []
    for node_id in wanted:
        with transaction.atomic():
            locked = Node.objects.select_for_update().filter(
                Q(pk=node_id), owner=access.user, partition__in=access.read_partitions
            )
            if locked.values_list("pk", flat=True).first() is None:
                skipped.append(Skipped(node_id, "not found (deleted or out of reach)"))
                continue
            still = orphans(access, [node_id])
            if not still:
                skipped.append(Skipped(node_id, "no longer an orphan (it has claims, names or evidence now)"))
                continue
            node = still[0]
            if not node.partition.is_active:
                skipped.append(Skipped(node_id, "its partition is inactive"))
                continue
            node_erase(access=access, node=node, action="node.prune", why={"rule": "orphan"})
            deleted.append(node_id)
    return Applied(deleted=deleted, skipped=skipped, claims_erased=0)

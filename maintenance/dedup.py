"""The exact-duplicate sweep: nodes of one partition, scope and type whose labels are the same name
(memory.names.normalize_name: case, accents and spacing aside) are merged with the ordinary merge service
(memory.services.nodes.node_merge_into) into the oldest of them (first created, then lowest id), so the id
people saw first keeps working and the others stay as pointers to it.

Tasks are left alone: two tasks with one label are often two commitments ("pay the rent" each month), and a
merge would retire one of their statuses. Self nodes and merged-away pointers are never part of a group.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from memory.access import Access
from memory.models import Node, NodeType, Scope, vector_fields
from memory.names import normalize_name
from memory.services.nodes import MergePlan, node_merge_into


@dataclass(frozen=True)
class DuplicateGroup:
    target: Node
    sources: list[Node]
    plans: list[MergePlan]

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.target.type,
            "label": self.target.label,
            "partitionKey": self.target.partition.key,
            "targetNodeId": self.target.pk,
            "sourceNodeIds": [node.pk for node in self.sources],
            "claimsMoved": sum(plan.claims for plan in self.plans),
        }


def duplicate_groups(access: Access) -> list[list[Node]]:
    """Groups of two or more exact duplicates in the partitions this request reads, oldest first in each."""
    nodes = (
        Node.objects.filter(owner=access.user, partition__in=access.read_partitions, is_self=False,
                            merged_into__isnull=True)
        .exclude(type__in=[NodeType.TASK, NodeType.SELF])
        .select_related("partition")
        .defer(*vector_fields())
        .order_by("created_at", "pk")
    )  # fmt: skip
    groups: dict[tuple[str, str, str, str], list[Node]] = defaultdict(list)
    for node in nodes:
        name = normalize_name(node.label)
        if name:
            groups[(node.partition_id, node.scope, node.type, name)].append(node)
    found = [group for group in groups.values() if len(group) > 1]
    return sorted(found, key=lambda group: group[0].pk)


@dataclass(frozen=True)
class DedupResult:
    groups: list[DuplicateGroup]

    @property
    def merged(self) -> int:
        return sum(len(group.sources) for group in self.groups)


def dedup_sweep(*, access: Access, dry_run: bool = True) -> DedupResult:
    """Find exact duplicates and, unless `dry_run`, merge each group into its oldest node (one transaction
    per group, each merge audited by the merge service). A second run finds nothing."""
    access.require_scope(Scope.READ if dry_run else Scope.MAINTENANCE)
    result = []
    for group in duplicate_groups(access):
        if dry_run:
            target, sources = group[0], group[1:]
            plans = [node_merge_into(access=access, source=node, target=target) for node in sources]
            result.append(DuplicateGroup(target=target, sources=sources, plans=plans))
            continue
        with transaction.atomic():
            ids = [node.pk for node in group]
            locked = {
                node.pk: node
                for node in Node.objects.select_for_update(of=("self",))
                .select_related("partition")
                .filter(pk__in=ids, merged_into__isnull=True)
            }
            alive = [node for node in group if node.pk in locked and normalize_name(locked[node.pk].label)
                     == normalize_name(group[0].label)]  # fmt: skip
            if len(alive) < 2 or not alive[0].partition.is_active:
                continue
            target = locked[alive[0].pk]
            access.check_write(target.partition)
            sources = [locked[node.pk] for node in alive[1:]]
            plans = [node_merge_into(access=access, source=node, target=target, apply=True) for node in sources]
            result.append(DuplicateGroup(target=target, sources=sources, plans=plans))
    return DedupResult(groups=result)

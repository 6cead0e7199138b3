"""A bounded view of the graph (seeds/000 `/query/graph`): at most `maxNodes` nodes in stable id order, and
only the claims and source references of those nodes."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from memory.access import Access
from memory.models import Claim, Evidence, Node, Scope, vector_fields
from memory.recall.atlas import current_claims

MAX_NODES = 500
MAX_CLAIMS = 2000


@dataclass(frozen=True)
class GraphView:
    nodes: list[Node]
    claims: list[Claim]
    sources: dict[str, list[str]]  # claim id -> source ids
    truncated: bool


def graph_view(access: Access, *, max_nodes: int = 100, node_types: list[str] | None = None) -> GraphView:
    access.require_scope(Scope.READ)
    nodes = Node.objects.filter(owner=access.user, partition__in=access.read_partitions, merged_into__isnull=True)
    if node_types:
        nodes = nodes.filter(type__in=node_types)
    chosen = list(nodes.defer(*vector_fields()).order_by("id")[: max_nodes + 1])
    truncated = len(chosen) > max_nodes
    chosen = chosen[:max_nodes]
    ids = [node.pk for node in chosen]
    # A claim belongs to the view when its subject is a chosen node and its object, if a node, is one too.
    claims = list(
        current_claims(access)
        .filter(subject_id__in=ids)
        .filter(Q(object_node__isnull=True) | Q(object_node_id__in=ids))
        .order_by("id")[:MAX_CLAIMS]
    )
    sources: dict[str, list[str]] = {}
    for claim_id, source_id in (
        Evidence.objects.filter(claim_id__in=[c.pk for c in claims]).order_by("id").values_list("claim_id", "source_id")
    ):
        sources.setdefault(claim_id, []).append(source_id)
    return GraphView(nodes=chosen, claims=claims, sources=sources, truncated=truncated)

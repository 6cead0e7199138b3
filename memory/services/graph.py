"""Finding or creating the node a name refers to, within one partition (aliases make names stick)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.extraction.base import NodeRef
from memory.models import Alias, Node, NodeType, Partition, User
from memory.names import normalize_name


def self_node(owner: User, partition: Partition) -> Node:
    """The user's own node in this partition (one at most, by constraint)."""
    node = Node.objects.filter(owner=owner, partition=partition, is_self=True).first()
    if node is not None:
        return node
    try:
        with transaction.atomic():
            return Node.objects.create(
                owner=owner, partition=partition, type=NodeType.SELF, label=owner.get_full_name() or owner.username,
                is_self=True,
            )  # fmt: skip
    except IntegrityError:  # created concurrently
        return Node.objects.get(owner=owner, partition=partition, is_self=True)


def node_resolve(owner: User, partition: Partition, ref: NodeRef) -> Node:
    """The node named `ref.label` (by label or alias, of the same type), created with an alias if new."""
    if ref.is_self:
        return self_node(owner, partition)
    normalized = normalize_name(ref.label)
    match = (
        Node.objects.filter(owner=owner, partition=partition, type=ref.type, merged_into__isnull=True)
        .filter(aliases__normalized=normalized)
        .order_by("id")
        .first()
    )
    if match is None:
        match = Node.objects.create(owner=owner, partition=partition, type=ref.type, label=ref.label.strip())
        Alias.objects.create(
            owner=owner, partition=partition, node=match, name=ref.label.strip(), normalized=normalized
        )
    Node.objects.filter(pk=match.pk).update(last_seen_at=timezone.now())
    return match

"""Finding or creating the node a name refers to, within one partition (aliases make names stick)."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Case, DateTimeField, F, Value, When
from django.db.models.functions import Greatest
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


def node_resolve(owner: User, partition: Partition, ref: NodeRef, seen_at: datetime | None = None) -> Node:
    """The node named `ref.label` (by label or alias, of the same type), created with an alias if new.
    `seen_at` is when it was mentioned (the message's time; now if unknown or in the future): last_seen_at
    only moves forward, so importing old chats does not make their people look recently seen."""
    node = node_find_or_create(owner, partition, ref)
    if not ref.is_self:
        nodes_seen({node.pk: seen_moment(seen_at)})
    return node


def node_find_or_create(owner: User, partition: Partition, ref: NodeRef) -> Node:
    """`node_resolve` without touching last_seen_at (a caller naming the node many times touches it once)."""
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
    return match


def seen_moment(seen_at: datetime | None) -> datetime:
    """When a mention counts as seen: its time, or now if unknown or in the future."""
    now = timezone.now()
    return min(seen_at, now) if seen_at is not None else now


def nodes_seen(seen: dict[str, datetime]) -> None:
    """Move each node's last_seen_at forward to its moment (never back), in one query."""
    if not seen:
        return
    # GREATEST skips NULL in PostgreSQL: a node never seen takes the moment as it is.
    moment = Case(*(When(pk=pk, then=Value(at)) for pk, at in seen.items()), output_field=DateTimeField())
    Node.objects.filter(pk__in=list(seen)).update(last_seen_at=Greatest(F("last_seen_at"), moment))

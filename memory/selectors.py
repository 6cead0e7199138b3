"""Reads. Every selector takes the Access and returns only what it may reach."""

from __future__ import annotations

from django.db.models import QuerySet

from memory.access import Access
from memory.models import AccessToken, Partition, Scope


def partitions_for_access(access: Access, *, active_only: bool = False) -> QuerySet[Partition]:
    access.require_scope(Scope.READ)
    partitions = Partition.objects.filter(owner=access.user).order_by("key")
    if access.reachable_keys is not None:
        partitions = partitions.filter(key__in=access.reachable_keys)
    if active_only:
        partitions = partitions.filter(is_active=True)
    return partitions


def tokens_for_user(access: Access) -> QuerySet[AccessToken]:
    """The tokens a person owns (web UI): newest first, revoked ones included for the record."""
    return AccessToken.objects.filter(owner=access.user).prefetch_related("acts_for")

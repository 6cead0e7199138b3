"""Partitions: owners create project namespaces and deactivate them (nothing is deleted)."""

from __future__ import annotations

import re

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.access import Access
from memory.errors import Conflict, NotFound, ScopeRequired, ValidationFailed
from memory.models import Partition, Scope
from memory.services.audit import audit_record

PARTITION_KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9:._-]{0,63}$")


def validate_partition_key(key: str) -> str:
    if not PARTITION_KEY_PATTERN.fullmatch(key):
        raise ValidationFailed(
            "A partition key is 1-64 lower-case letters, digits, ':', '.', '_' or '-', "
            "starting with a letter or digit.",
            details={"key": [f"Invalid partition key: {key!r}."]},
        )
    return key


@transaction.atomic
def partition_create(*, access: Access, key: str, label: str = "") -> Partition:
    """Create a partition owned by the access's user. CONFLICT if the key exists (active or not)."""
    access.require_scope(Scope.WRITE)
    validate_partition_key(key)
    if access.reachable_keys is not None:
        raise ScopeRequired(Scope.WRITE, "This token is limited to listed partitions and cannot create new ones.")
    try:
        with transaction.atomic():
            partition = Partition.objects.create(owner=access.user, key=key, label=label or key)
    except IntegrityError as exc:
        raise Conflict("A partition with this key already exists.", details={"key": key}) from exc
    audit_record(
        actor=access.actor,
        owner=access.user,
        action="partition.create",
        target=partition,
        partition=partition,
        after={"key": key, "label": partition.label},
    )
    return partition


@transaction.atomic
def partition_deactivate(*, access: Access, key: str) -> Partition:
    """Hide a partition from workspace reads and refuse writes to it. Its content is kept. Idempotent."""
    access.require_scope(Scope.EDIT)
    partition = Partition.objects.select_for_update().filter(owner=access.user, key=key).first()
    if partition is None or not access.can_reach(partition):
        raise NotFound("No such partition.", details={"key": key})
    if partition.is_personal:
        raise ValidationFailed(
            "The personal partition cannot be deactivated.", details={"key": ["memory:personal is permanent."]}
        )
    return _set_active(access, partition, active=False)


@transaction.atomic
def partition_reactivate(*, access: Access, key: str) -> Partition:
    """Undo `partition_deactivate`: the partition is read and written again. Idempotent."""
    access.require_scope(Scope.EDIT)
    partition = Partition.objects.select_for_update().filter(owner=access.user, key=key).first()
    if partition is None or not access.can_reach(partition):
        raise NotFound("No such partition.", details={"key": key})
    return _set_active(access, partition, active=True)


def _set_active(access: Access, partition: Partition, *, active: bool) -> Partition:
    """Switch a locked partition on or off, audited; nothing happens (and nothing is audited) when it already is."""
    if partition.is_active != active:
        partition.is_active = active
        partition.deactivated_at = None if active else timezone.now()
        partition.save(update_fields=["is_active", "deactivated_at"])
        audit_record(
            actor=access.actor,
            owner=access.user,
            action="partition.reactivate" if active else "partition.deactivate",
            target=partition,
            partition=partition,
            before={"isActive": not active},
            after={"isActive": active},
        )
    return partition

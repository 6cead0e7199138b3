"""The audit helper every write goes through."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from memory.access import Actor
from memory.models import MemoryEvent, Partition, User


def audit_record(
    *,
    actor: Actor,
    owner: User,
    action: str,
    target: models.Model | None = None,
    partition: Partition | None = None,
    target_type: str = "",
    target_id: str = "",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> MemoryEvent:
    """Append one MemoryEvent for a change already made in the current transaction.

    `before` / `after` are short summaries of the changed fields, never whole documents. The target is a
    model instance, or a `target_type` / `target_id` for something that is not one row (a memory key).
    """
    if target is not None:
        target_type = target_type or target._meta.model_name or type(target).__name__.lower()
        target_id = target_id or str(target.pk)
    return MemoryEvent.objects.create(
        owner=owner,
        partition=partition,
        actor_kind=actor.kind,
        actor_user=actor.user,
        actor_token=actor.token,
        action=action,
        target_type=target_type,
        target_id=target_id,
        before=before,
        after=after,
    )


def audit_erase_target(*, owner: User, target_type: str, target_id: str) -> int:
    """Erasure: blank the content of every audit row about one object; the fact that it changed remains."""
    return MemoryEvent.objects.filter(owner=owner, target_type=target_type, target_id=target_id).update(
        before=None, after=None, erased_at=timezone.now()
    )

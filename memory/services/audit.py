"""The audit helper every write goes through."""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import Any

from django.core.cache import cache
from django.db import models, transaction
from django.utils import timezone

from config.redis_retry import done_or_retried
from memory.access import Actor
from memory.models import MemoryEvent, Partition, RedisDebtKind, User

# Actions whose writes neither search nor the atlas reads (tokens, sessions, metrics, artifacts, an export, a job
# queued again): they leave the memory version alone, so what a quiet memory's searches keep at it outlives them.
# A write on their path that search does read says so itself (a metric's review task is audited as a task, the
# Event node of a reading calls `memory_changed`, the job's chunks too). Any other action, a new one too, moves the
# version on.
OUTSIDE_RECALL = frozenset({
    "token.issue", "token.revoke", "session.create", "artifact.put", "memory.export", "operation.retry",
    "metric.create", "metric.observe", "metric.observe_bulk", "metric.keep", "metric.merge",
})  # fmt: skip


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
    if action not in OUTSIDE_RECALL:
        memory_changed(owner.pk)
    return MemoryEvent.objects.create(
        owner=owner,
        partition=partition,
        actor_kind=actor.kind,
        actor_user=actor.user,
        actor_token=actor.token,
        surface=actor.surface,
        action=action,
        target_type=target_type,
        target_id=target_id,
        before=before,
        after=after,
    )


def audit_erase_target(*, owner: User, target_type: str, target_id: str) -> int:
    """Erasure: blank the content of every audit row about one object; the fact that it changed remains. Every
    erasure of an object passes here, so the owner's cached views of their memory (word counts, who spoke, the
    atlas) go too, once the erasure commits, once a transaction (memory.recall.caching)."""
    from memory.recall.caching import views_dropped_on_commit  # recall reads the memory version from this module

    views_dropped_on_commit(owner.pk)
    return MemoryEvent.objects.filter(owner=owner, target_type=target_type, target_id=target_id).update(
        before=None, after=None, erased_at=timezone.now()
    )


logger = logging.getLogger("memory.audit")


def memory_changed(owner_id: int) -> None:
    """The owner's memory changes in the current transaction: their memory version changes once it commits. Every
    audited write says so; the pipeline says so for the chunks it writes, which are not audited one by one, and
    reconcile and claims_erase for what they write unaudited, whoever calls them."""
    transaction.on_commit(lambda: _bump_version(owner_id))


def memory_version_key(owner_id: int) -> str:
    """The cache key of the owner's memory version (`memory_version`), for a reader that reads it with other keys."""
    return f"memory-version:{owner_id}"


def _bump_version(owner_id: int) -> None:
    # Redis away as the write commits: moved on once it answers (what was kept at the version before the write is read
    # meanwhile, as nothing is while it is away).
    now, later = (
        functools.partial(_version_moved_on, owner_id),
        functools.partial(memory_version_moved_on_if_kept, owner_id),
    )
    if not done_or_retried((RedisDebtKind.MEMORY_VERSION.value, owner_id), now, later):
        logger.warning("audit.version_unavailable")


def _version_moved_on(owner_id: int) -> None:
    try:
        cache.incr(memory_version_key(owner_id))
    except ValueError:
        cache.add(memory_version_key(owner_id), 1, timeout=None)


def memory_version_settled(owner_id: int) -> None:
    """A change of the owner's version owed since Redis was away (memory.services.redis_debts): moved on where Redis
    keeps one, deleted where the account is gone (as its erasure does)."""
    if User.objects.filter(pk=owner_id).exists():
        memory_version_moved_on_if_kept(owner_id)
    else:
        cache.delete(memory_version_key(owner_id))


def memory_version_moved_on_if_kept(owner_id: int) -> None:
    """The owner's memory version moved on, late (Redis was away): where Redis holds no counter of theirs (the
    account erased since, or no version read yet, so nothing kept at one), none is made."""
    with contextlib.suppress(ValueError):
        cache.incr(memory_version_key(owner_id))


def memory_version(owner_id: int) -> int:
    """A number that changes after every committed change to what this owner's searches and atlas read (for caches
    of derived views such as the atlas; OUTSIDE_RECALL). Raises RedisError when the cache is down: such caches must
    then be skipped."""
    return int(cache.get_or_set(memory_version_key(owner_id), 1, timeout=None) or 1)

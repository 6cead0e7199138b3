"""Erasure in bulk: a partition with everything in it, or a whole account (issue 15, SPEC §11).

Nothing that carries erased text stays: the rows go; audit rows about them keep only the fact that something
changed (action, ids, time); admin log lines about them go (their `object_repr` quotes the object); blob
files go from disk once nothing of the owner uses them. Blobs are content-addressed per owner
(memory.services.blobs), so two users never share a file: another user's identical bytes are their own.
"""

from __future__ import annotations

import functools
import logging
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.admin.models import LogEntry
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from config.redis_retry import done_or_retried
from memory.access import Access
from memory.credentials import credentials_changed
from memory.errors import NotFound
from memory.models import (
    AccessToken,
    AgentSession,
    Alias,
    ArtifactPlacement,
    Blob,
    Chunk,
    Claim,
    Evidence,
    Feedback,
    MemoryEvent,
    Node,
    Operation,
    Partition,
    RedisDebtKind,
    Scope,
    Scratchpad,
    SessionEvent,
    Source,
    ToolEvent,
    User,
)
from memory.recall.caching import drop_cached_views, views_dropped_on_commit
from memory.services.audit import audit_record, memory_version_key
from memory.services.claim_erasure import claims_erase

logger = logging.getLogger("memory.erasure")
_BATCH = 1000


@dataclass(frozen=True)
class PartitionErasure:
    partition_key: str
    counts: dict[str, int]
    blobs: int
    kept_empty: bool  # the personal partition stays (empty): every user always has one
    dry_run: bool


@dataclass
class AccountErasure:
    username: str
    partitions: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    blobs: int = 0


def _metrics(partition: Partition) -> tuple[Any, Any]:
    from metrics.models import MetricDefinition, Observation

    definitions = MetricDefinition.objects.filter(partition=partition)
    return definitions, Observation.objects.filter(Q(definition__in=definitions) | Q(source__partition=partition))


def _inventory(partition: Partition) -> dict[str, int]:
    """What erasing the partition takes with it, by kind (the preview and the answer)."""
    definitions, observations = _metrics(partition)
    scratchpad = Scratchpad.objects.filter(partition=partition).exclude(content="")
    claims = Claim.objects.filter(partition=partition)
    return {
        "sources": Source.objects.filter(partition=partition).count(),
        "chunks": Chunk.objects.filter(partition=partition).count(),
        "nodes": Node.objects.filter(partition=partition).count(),
        "claims": claims.count(),
        "memories": claims.exclude(key="").values("key").distinct().count(),
        "sessions": AgentSession.objects.filter(partition=partition).count(),
        "sessionEvents": SessionEvent.objects.filter(session__partition=partition).count(),
        "metrics": definitions.count(),
        "observations": observations.count(),
        "artifacts": ArtifactPlacement.objects.filter(partition=partition).count(),
        "feedback": Feedback.objects.filter(partition=partition).count(),
        "scratchpad": scratchpad.count(),
        "operations": Operation.objects.filter(partition=partition).count(),
    }


def _in_batches(ids: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(ids), _BATCH):
        yield ids[start : start + _BATCH]


def _blank_audit(owner: User, partition: Partition, object_ids: list[str]) -> None:
    """Audit rows recorded in the partition, and rows about anything in it (some are recorded without a
    partition), keep the fact and lose the content. A keyed memory's target id names its key: it goes too."""
    now = timezone.now()
    rows = MemoryEvent.objects.filter(owner=owner)
    rows.filter(Q(partition=partition) | Q(target_id__startswith=f"{partition.pk}:")).filter(
        target_type="memory"
    ).update(target_id="", before=None, after=None, erased_at=now)
    rows.filter(partition=partition).update(before=None, after=None, erased_at=now)
    for batch in _in_batches(object_ids):
        rows.filter(target_id__in=batch).update(before=None, after=None, erased_at=now)
        LogEntry.objects.filter(object_id__in=batch).delete()


def _mend_across(owner: User, partition: Partition) -> None:
    """Claims in other partitions that lean on this one (rare: a revision chain or evidence crossing the
    boundary) go through claim erasure, so a chain is mended around the gap (an older value elsewhere becomes
    current again) and a claim known only from this partition's sources goes with them."""
    inside, outside = (
        Claim.objects.filter(partition=partition),
        Claim.objects.filter(owner=owner).exclude(partition=partition),
    )
    linked = set(inside.filter(Q(supersedes__in=outside) | Q(revisions__in=outside)).values_list("pk", flat=True))
    backed_elsewhere = Evidence.objects.filter(owner=owner).exclude(source__partition=partition).values("claim_id")
    only_here = outside.filter(evidence__source__partition=partition).exclude(pk__in=backed_elsewhere)
    doomed = linked | set(only_here.values_list("pk", flat=True))
    if doomed:
        claims_erase(owner=owner, claim_ids=doomed)


def _erase_content(partition: Partition) -> set[str]:
    """Delete every row in the partition; returns the ids of the blobs it used (deleted by the caller once
    nothing else uses them)."""
    owner = partition.owner
    definitions, observations = _metrics(partition)
    sources = Source.objects.filter(partition=partition)
    # The pipeline locks a source while it writes what it derived (memory.pipeline.steps.Job.lock_source):
    # taking these locks first waits for a running step, and a later one finds its source gone.
    list(sources.select_for_update().values_list("pk", flat=True))
    object_ids = [
        partition.pk,
        *sources.values_list("pk", flat=True),
        *Claim.objects.filter(partition=partition).values_list("pk", flat=True),
        *Node.objects.filter(partition=partition).values_list("pk", flat=True),
        *AgentSession.objects.filter(partition=partition).values_list("pk", flat=True),
        *definitions.values_list("pk", flat=True),
        *observations.values_list("pk", flat=True),
    ]
    blob_ids = set(sources.exclude(blob=None).values_list("blob_id", flat=True))
    blob_ids |= set(ArtifactPlacement.objects.filter(partition=partition).values_list("blob_id", flat=True))
    _blank_audit(owner, partition, object_ids)
    _mend_across(owner, partition)
    # Leaves first, so no cascade has to walk far; every statement is scoped to this partition.
    Feedback.objects.filter(partition=partition).delete()
    AgentSession.objects.filter(partition=partition).delete()
    Scratchpad.objects.filter(partition=partition).delete()
    observations.delete()
    definitions.delete()
    Claim.objects.filter(partition=partition).delete()
    Alias.objects.filter(partition=partition).delete()
    Node.objects.filter(partition=partition).delete()
    Chunk.objects.filter(partition=partition).delete()
    Operation.objects.filter(partition=partition).delete()
    sources.delete()
    ArtifactPlacement.objects.filter(partition=partition).delete()
    ToolEvent.objects.filter(owner=owner, partition_key=partition.key).update(partition_key="")
    return blob_ids


def _erase_unused_blobs(blob_ids: Iterable[str]) -> list[str]:
    """Delete the blobs no source and no artifact placement uses any more; the files go after commit.
    Returns their storage names."""
    names = []
    for blob in Blob.objects.filter(pk__in=list(blob_ids)):
        if blob.sources.exists() or blob.placements.exists():
            continue
        MemoryEvent.objects.filter(owner_id=blob.owner_id, target_type="blob", target_id=blob.pk).update(
            before=None, after=None, erased_at=timezone.now()
        )
        names.append(blob.storage_name)
        blob.delete()
    transaction.on_commit(lambda: _delete_files(names))
    return names


def _delete_files(names: list[str]) -> None:
    for name in names:
        default_storage.delete(name)


@transaction.atomic
def partition_erase(*, access: Access, key: str, dry_run: bool = True) -> PartitionErasure:
    """Erase a partition and everything in it (needs `edit`). With `dry_run`, only count what would go.

    The personal partition is emptied and kept: every user has one from the moment they exist, and tokens
    default to it. Any other partition goes with its content; a token still naming it gets NOT_FOUND."""
    access.require_scope(Scope.EDIT)
    partition = Partition.objects.select_for_update().filter(owner=access.user, key=key).first()
    if partition is None or not access.can_reach(partition):
        raise NotFound("No such partition.", details={"key": key})
    counts = _inventory(partition)
    if dry_run:
        return PartitionErasure(key, counts, blobs=0, kept_empty=partition.is_personal, dry_run=True)
    blobs = _erase_unused_blobs(_erase_content(partition))
    owner_id = access.user.pk
    views_dropped_on_commit(owner_id)
    partition_id = partition.pk
    if partition.is_personal:
        Partition.objects.filter(pk=partition_id).update(label="Personal", is_active=True, deactivated_at=None)
        credentials_changed()  # an update() sends no signal: the cached partitions of every process must go
    else:
        partition.delete()
    audit_record(
        actor=access.actor,
        owner=access.user,
        action="partition.erase",
        target_type="partition",
        target_id=partition_id,
        partition=partition if partition.is_personal else None,
        after={**counts, "blobs": len(blobs)},
    )
    return PartitionErasure(key, counts, blobs=len(blobs), kept_empty=partition.is_personal, dry_run=False)


def _login_sessions(user: User) -> list[str]:
    """The user's web sign-in sessions (Django keeps them without a foreign key)."""
    keys = []
    for session in Session.objects.iterator():
        if str(session.get_decoded().get("_auth_user_id", "")) == str(user.pk):
            keys.append(session.session_key)
    return keys


def account_erase(*, user: User) -> AccountErasure:
    """Erase a whole account: every partition's content, the user row with its tokens, audit trail and call
    log, their sign-in sessions and admin log lines, and every blob file of theirs (the owner's directory in
    the blob store goes too, with any leftover of a crashed write). CLI and admin only: no token can do it."""
    with transaction.atomic():
        user = User.objects.select_for_update().get(pk=user.pk)
        erased = AccountErasure(username=user.username)
        blob_ids: set[str] = set()
        for partition in Partition.objects.filter(owner=user).order_by("key"):
            for kind, number in _inventory(partition).items():
                erased.counts[kind] = erased.counts.get(kind, 0) + number
            blob_ids |= _erase_content(partition)
            erased.partitions += 1
        blob_ids |= set(Blob.objects.filter(owner=user).values_list("pk", flat=True))
        erased.blobs = len(_erase_unused_blobs(blob_ids))
        Session.objects.filter(session_key__in=_login_sessions(user)).delete()
        tokens = [str(pk) for pk in AccessToken.objects.filter(owner=user).values_list("pk", flat=True)]
        LogEntry.objects.filter(object_id__in=tokens).delete()  # their labels are in object_repr
        LogEntry.objects.filter(content_type__model="user", object_id=str(user.pk)).delete()
        owner_id = user.pk
        user.delete()
        transaction.on_commit(lambda: _forget_owner(owner_id))
    logger.info("account.erase", extra={"ownerId": owner_id, "partitions": erased.partitions, **erased.counts})
    return erased


def _forget_owner(owner_id: int) -> None:
    """After commit: the owner's blob directory (any file left by a crashed write) and their cache keys."""
    try:
        root = default_storage.path(str(owner_id))
    except NotImplementedError:  # a storage without local paths: the files were deleted one by one
        root = ""
    if root:
        shutil.rmtree(root, ignore_errors=True)
    # Under the key of a change of their version owed (memory.services.audit), which it replaces.
    if not done_or_retried(
        (RedisDebtKind.MEMORY_VERSION.value, owner_id), functools.partial(cache.delete, memory_version_key(owner_id))
    ):
        logger.warning("account.erase.cache_unavailable")
    drop_cached_views(owner_id)


def account_inventory(user: User) -> dict[str, int]:
    """What erasing the account takes with it (the admin's confirmation page)."""
    counts: dict[str, int] = {"partitions": 0, "blobs": Blob.objects.filter(owner=user).count()}
    for partition in Partition.objects.filter(owner=user):
        counts["partitions"] += 1
        for kind, number in _inventory(partition).items():
            counts[kind] = counts.get(kind, 0) + number
    return counts

"""Claim lifecycle: pin, unpin, expire, retract, correct (a new revision), erase. Nothing is edited in place
without a MemoryEvent, and a correction keeps the old revision in the history."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from commitments.services import STATUSES, status_claim_revise, status_word, task_lock
from memory.access import Access
from memory.errors import Conflict, ValidationFailed
from memory.models import Claim, ClaimOrigin, ClaimStatus, Scope
from memory.selectors import claim_for_access
from memory.services.audit import audit_record
from memory.services.claim_erasure import claim_lineage, claims_erase
from memory.services.embeddings import vectors_follow

_CURRENT = (ClaimStatus.ACTIVE, ClaimStatus.SUGGESTED, ClaimStatus.QUARANTINED)


def _summary(claim: Claim, fields: list[str]) -> dict[str, Any]:
    return {name: getattr(claim, name) for name in fields}


def _claim_for_write(access: Access, claim_id: str) -> Claim:
    """The claim, row-locked, after the locks every writer of its kind takes first: a keyed memory's key lock,
    a task status's task lock. Taking the row first would invert their order against memory_save and
    status_set and deadlock."""
    claim = claim_for_access(access, claim_id)
    if claim.key:
        key_lock(owner_id=claim.owner_id, partition_id=claim.partition_id, key=claim.key)
    if claim.predicate == "HAS_TASK_STATUS" and claim.subject is not None:
        task_lock(claim.subject)
    return claim_for_access(access, claim_id, for_update=True)


def _change(access: Access, claim_id: str, action: str, scope: str, changes: dict[str, Any]) -> Claim:
    """Apply field changes to one claim in its own partition, with an audit row of what changed."""
    access.require_scope(scope)
    claim = _claim_for_write(access, claim_id)
    access.check_write(claim.partition)
    changed = [name for name, value in changes.items() if getattr(claim, name) != value]
    if not changed:
        return claim
    before = _summary(claim, changed)
    for name in changed:
        setattr(claim, name, changes[name])
    claim.save(update_fields=[*changed, "updated_at"])
    audit_record(
        actor=access.actor,
        owner=access.user,
        action=action,
        target=claim,
        partition=claim.partition,
        before={key: str(value) for key, value in before.items()},
        after={key: str(getattr(claim, key)) for key in changed},
    )
    return claim


def key_lock(*, owner_id: int, partition_id: str, key: str) -> None:
    """Inside a transaction: serialise every write of one keyed memory (saves, deletes, corrections and
    confirmations) until the transaction ends, so none of them runs into the one-current-value index."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"memory:{owner_id}:{partition_id}:{key}"]
        )


def _active_value_of_key(claim: Claim) -> QuerySet[Claim]:
    """The current value of the key `claim` is a revision of, other than `claim` itself (at most one)."""
    key_lock(owner_id=claim.owner_id, partition_id=claim.partition_id, key=claim.key)
    return (
        Claim.objects.select_for_update()
        .filter(owner=claim.owner, partition=claim.partition, key=claim.key, status=ClaimStatus.ACTIVE)
        .exclude(pk=claim.pk)
    )


@transaction.atomic
def claim_pin(*, access: Access, claim_id: str) -> Claim:
    """Pinned claims are never reaped or expired by maintenance, and rank higher in recall."""
    return _change(access, claim_id, "claim.pin", Scope.WRITE, {"pinned": True})


@transaction.atomic
def claim_unpin(*, access: Access, claim_id: str) -> Claim:
    return _change(access, claim_id, "claim.unpin", Scope.WRITE, {"pinned": False})


@transaction.atomic
def claim_expire(*, access: Access, claim_id: str) -> Claim:
    """No longer current (kept, out of recall). Pinned claims must be unpinned first."""
    access.require_scope(Scope.EDIT)  # before anything about the claim is revealed
    claim = claim_for_access(access, claim_id)
    if claim.pinned:
        raise Conflict("Pinned claims do not expire; unpin it first.", details={"claimId": claim_id})
    now = timezone.now()
    return _change(
        access, claim_id, "claim.expire", Scope.EDIT,
        {"status": ClaimStatus.EXPIRED, "expires_at": now, "valid_until": claim.valid_until or now},
    )  # fmt: skip


@transaction.atomic
def claim_retract(*, access: Access, claim_id: str) -> Claim:
    """Never true: kept for the record, out of every read that does not ask for retracted claims."""
    access.require_scope(Scope.EDIT)
    claim = claim_for_access(access, claim_id)
    return _change(
        access, claim_id, "claim.retract", Scope.EDIT,
        {"status": ClaimStatus.RETRACTED, "valid_until": claim.valid_until or timezone.now()},
    )  # fmt: skip


@transaction.atomic
def claim_confirm(*, access: Access, claim_id: str) -> Claim:
    """The owner vouches for a claim (needs `edit`): a suggested or quarantined claim becomes active, and a
    `needs_reverification` flag is lifted. Claims already superseded, retracted or expired cannot be."""
    access.require_scope(Scope.EDIT)
    claim = _claim_for_write(access, claim_id)  # the status is checked once nothing can change it
    if claim.status not in _CURRENT:
        raise Conflict(
            f"A {claim.status} claim cannot be confirmed; save a new one instead.",
            details={"claimId": claim_id, "status": claim.status},
        )
    if claim.predicate == "HAS_TASK_STATUS" and claim.status != ClaimStatus.ACTIVE:
        access.check_write(claim.partition)
        return status_claim_revise(actor=access.actor, claim=claim, status=str(claim.object_value), confirm=True)
    if claim.key and claim.status != ClaimStatus.ACTIVE:
        # A keyed memory has one current value (claim_one_current_value_per_key): the confirmed one replaces it.
        _active_value_of_key(claim).update(
            status=ClaimStatus.SUPERSEDED, superseded_by=claim, valid_until=timezone.now()
        )
    changes = {"status": ClaimStatus.ACTIVE, "needs_reverification": False}
    return _change(access, claim_id, "claim.confirm", Scope.EDIT, changes)


@transaction.atomic
def claim_correct(*, access: Access, claim_id: str, statement: str, value: Any = None) -> Claim:
    """A new revision with the corrected statement; the old one becomes `superseded` and stays in history."""
    access.require_scope(Scope.EDIT)
    old = _claim_for_write(access, claim_id)
    access.check_write(old.partition)
    if old.status not in _CURRENT:
        raise Conflict(
            f"This revision is {old.status}; correct the current one.",
            details={"claimId": claim_id, "currentClaimId": old.superseded_by_id},
        )
    statement = statement.strip()
    if not statement:
        raise ValidationFailed("The corrected statement is empty.", details={"statement": ["Required."]})
    if old.predicate == "HAS_TASK_STATUS":
        return _status_correct(access, old, statement, value)
    now = timezone.now()
    # Superseded before the new revision exists: partial unique indexes allow one active value per key (a
    # corrected quarantined value also replaces the key's active one).
    replaced = [old, *(_active_value_of_key(old) if old.key else [])]
    for previous in replaced:
        previous.status, previous.valid_until = ClaimStatus.SUPERSEDED, now
        previous.save(update_fields=["status", "valid_until", "updated_at"])
    new = Claim.objects.create(
        owner=old.owner,
        partition=old.partition,
        scope=old.scope,
        statement=statement,
        kind=old.kind,
        subject=old.subject,
        predicate=old.predicate,
        object_node=old.object_node,
        object_value=old.object_value,
        key=old.key,
        value=old.value if value is None else value,
        status=ClaimStatus.ACTIVE,
        origin=ClaimOrigin.MANUAL,
        derived_from=old,
        confidence=1.0,
        importance=old.importance,
        pinned=old.pinned,
        valid_from=now,
        stated_at=now,
    )
    for previous in replaced:
        previous.superseded_by = new
        previous.save(update_fields=["superseded_by", "updated_at"])
    audit_record(
        actor=access.actor,
        owner=access.user,
        action="claim.correct",
        target=new,
        partition=new.partition,
        before={"claimId": old.pk, "statement": old.statement},
        after={"claimId": new.pk, "statement": new.statement},
    )
    vectors_follow(access.user.pk)
    return new


def _status_correct(access: Access, old: Claim, statement: str, value: Any) -> Claim:
    """A task's status is corrected to the status named by `value` (or the statement), as a status change."""
    status = status_word(value) or status_word(statement)
    if status is None:
        raise ValidationFailed(
            f"A task status can only be corrected to one of {', '.join(STATUSES)}; "
            "to change anything else about the task use /commitments/set-status or /node/update.",
            details={"value": [f"One of {', '.join(STATUSES)}."]},
        )
    return status_claim_revise(actor=access.actor, claim=old, status=status)


def _erasure_set(claim: Claim) -> set[str]:
    """The claims erasing `claim` removes: it and all its revisions. A task's statuses are successive decisions,
    not revisions of one text: erasing one leaves the others (the one before becomes current again if this was
    the current one)."""
    return {claim.pk} if claim.predicate == "HAS_TASK_STATUS" else claim_lineage({claim.pk})


def claim_erase_preview(*, access: Access, claim_id: str) -> list[Claim]:
    """What `claim_erase` would remove, oldest first, without removing it (the web UI's confirmation). Erasing a
    task's only status erases the task too, with every claim about it (`claims_erase`)."""
    access.require_scope(Scope.EDIT)
    claim = claim_for_access(access, claim_id)
    doomed = Q(pk__in=_erasure_set(claim))
    task = claim.subject if claim.predicate == "HAS_TASK_STATUS" else None
    if task is not None and not Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS").exclude(pk=claim.pk):
        doomed |= Q(subject=task) | Q(object_node=task)
    return list(Claim.objects.filter(doomed, owner=access.user).order_by("recorded_at", "id"))


@transaction.atomic
def claim_erase(*, access: Access, claim_id: str) -> int:
    """Erase a claim with all its revisions (corrections of it, and what it corrected) and evidence links, and
    the content of their audit rows. A claim that merely superseded it stays (`claims_erase`), and so do the
    other statuses of a task."""
    access.require_scope(Scope.EDIT)
    claim = _claim_for_write(access, claim_id)
    erased = claims_erase(owner=access.user, claim_ids=_erasure_set(claim))
    audit_record(
        actor=access.actor,
        owner=access.user,
        action="claim.erase",
        target=claim,
        partition=claim.partition,
        after={"revisions": erased},
    )
    return erased

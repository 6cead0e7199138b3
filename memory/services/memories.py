"""Keyed memories (seeds/004): addressable claims saved by key, one current value per key, exactly once per
`event_id`, screened on write, read back after the commit for the acknowledgement, every save a revision
(history kept; retiring a key keeps it too, erasing it is a separate choice)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memory.access import Access
from memory.errors import Conflict, NotFound, ValidationFailed
from memory.models import Claim, ClaimKind, ClaimOrigin, ClaimStatus, MemoryEvent, Partition, Scope
from memory.screening import quarantines, sanitize_text, sanitize_value
from memory.services.audit import audit_record
from memory.services.claim_erasure import claims_erase
from memory.services.claims import key_lock
from memory.services.embeddings import vectors_follow

MAX_VALUE_BYTES = 64 * 1024


@dataclass(frozen=True)
class SaveAck:
    """What a write answers: the stored row as read back, and what happened to it."""

    claim: Claim
    deduplicated: bool
    quarantined: bool
    verified_persisted: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.claim.pk,
            "key": self.claim.key,
            "verified_persisted": self.verified_persisted,
            "deduplicated": self.deduplicated,
            "quarantined": self.quarantined,
        }


def statement_for(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


# One current value per (owner, partition, key) is a database invariant (a partial unique index); the
# exactly-once `event_id` is unique per (owner, partition).
CURRENT_KEY_CONSTRAINT = "claim_one_current_value_per_key"
EVENT_ID_CONSTRAINT = "claim_unique_event_id"
# Saves of one key queue on an advisory lock, so a conflict needs another writer of keyed claims (a correction
# or confirmation in the review UI) racing the save; a few attempts are plenty.
SAVE_ATTEMPTS = 5


def _violated(exc: IntegrityError) -> str:
    """The name of the constraint (or unique index) a write ran into."""
    diag = getattr(exc.__cause__, "diag", None)
    return str(getattr(diag, "constraint_name", "") or "")


def _replayed(access: Access, partition: Partition, event_id: str) -> Claim | None:
    return Claim.objects.filter(owner=access.user, partition=partition, event_id=event_id).first()


def _ack(claim: Claim, *, deduplicated: bool) -> SaveAck:
    """Read the row back outside the write's transaction. When the caller still holds a transaction around the
    save nothing is committed yet, and the ack says so instead of reading its own uncommitted write."""
    stored = None if connection.in_atomic_block else Claim.objects.filter(pk=claim.pk).values("value").first()
    return SaveAck(
        claim=claim,
        deduplicated=deduplicated,
        quarantined=claim.status == ClaimStatus.QUARANTINED,
        verified_persisted=stored is not None and stored["value"] == claim.value,
    )


def memory_save(
    *,
    access: Access,
    key: str,
    value: Any,
    kind: str = ClaimKind.NOTE,
    meta: dict[str, Any] | None = None,
    origin: str = ClaimOrigin.USER_STATED,
    event_id: str = "",
) -> SaveAck:
    """Save `value` under `key` in the strict partition. The same `event_id` again (in the same partition)
    returns the first result (deduplicated); the same value again is deduplicated too; a new value supersedes
    the current one. Not atomic itself: the write commits in its own transaction, then the ack reads it back."""
    claim, deduplicated = _memory_write(
        access=access, key=key, value=value, kind=kind, meta=meta or {}, origin=origin, event_id=event_id
    )
    return _ack(claim, deduplicated=deduplicated)


@transaction.atomic
def _memory_write(
    *, access: Access, key: str, value: Any, kind: str, meta: dict[str, Any], origin: str, event_id: str
) -> tuple[Claim, bool]:
    access.require_scope(Scope.WRITE)
    key = key.strip()
    if not key:
        raise ValidationFailed("A memory needs a key.", details={"key": ["Required."]})
    partition = access.write_partition()
    value, meta = sanitize_value(value), sanitize_value(meta)
    statement = statement_for(value)
    if len(statement.encode()) > MAX_VALUE_BYTES:
        raise ValidationFailed("The value is too large.", details={"value": [f"At most {MAX_VALUE_BYTES} bytes."]})
    key_lock(owner_id=access.user.pk, partition_id=partition.pk, key=key)
    if event_id and (earlier := _replayed(access, partition, event_id)):
        return earlier, True
    revision = _Revision(access, partition, key, value, kind, meta, origin, event_id, statement)
    for _attempt in range(SAVE_ATTEMPTS):
        try:
            with transaction.atomic():  # a savepoint: a conflict undoes this attempt only
                return revision.write()
        except IntegrityError as exc:
            violated = _violated(exc)
            if violated == EVENT_ID_CONSTRAINT and (earlier := _replayed(access, partition, event_id)):
                return earlier, True  # the same event_id was saved concurrently: that first save is the answer
            if violated != CURRENT_KEY_CONSTRAINT:
                raise
            # Another writer made a current value of this key after this attempt read it: read again, on top.
    raise Conflict("The key kept changing while it was being saved; save it again.", details={"key": key})


@dataclass(frozen=True)
class _Revision:
    """One attempt at writing a new value of a key on top of whatever is current when it runs."""

    access: Access
    partition: Partition
    key: str
    value: Any
    kind: str
    meta: dict[str, Any]
    origin: str
    event_id: str
    statement: str

    def write(self) -> tuple[Claim, bool]:
        mine = Claim.objects.select_for_update().filter(owner=self.access.user, partition=self.partition, key=self.key)
        current = mine.filter(status=ClaimStatus.ACTIVE).first()  # at most one: the partial unique index
        newest = (
            mine.filter(status__in=[ClaimStatus.ACTIVE, ClaimStatus.QUARANTINED])
            .order_by("-recorded_at", "-valid_from")
            .first()
        )
        quarantine = quarantines(self.origin, self.statement)
        if newest is not None and newest.value == self.value and newest.kind == self.kind and not quarantine:
            return newest, True
        now = timezone.now()
        if current is not None and not quarantine:
            # Superseded before the new row exists: the index allows one active row at any moment.
            current.status, current.valid_until = ClaimStatus.SUPERSEDED, now
            current.save(update_fields=["status", "valid_until", "updated_at"])
        claim = Claim.objects.create(
            owner=self.access.user,
            partition=self.partition,
            statement=sanitize_text(f"{self.key}: {self.statement}"),
            kind=self.kind,
            key=self.key,
            value=self.value,
            meta=self.meta,
            status=ClaimStatus.QUARANTINED if quarantine else ClaimStatus.ACTIVE,
            origin=self.origin,
            derived_from=newest,
            event_id=self.event_id,
            valid_from=now,
            stated_at=now,
        )
        if current is not None and not quarantine:
            current.superseded_by = claim
            current.save(update_fields=["superseded_by", "updated_at"])
        audit_record(
            actor=self.access.actor, owner=self.access.user, action="memory.save", target=claim,
            partition=self.partition, after={"key": self.key, "status": claim.status, "origin": self.origin},
        )  # fmt: skip
        vectors_follow(self.access.user.pk)
        return claim, False


@transaction.atomic
def memory_delete(*, access: Access, key: str, event_id: str = "", erase_history: bool = False) -> dict[str, Any]:
    """Retire a key (needs `edit`): its current value (and any quarantined one) expires, `memory_get` answers
    NOT_FOUND, the history stays readable, and a new save starts a new current value. Only with
    `erase_history` are every revision and the content of its audit rows erased. With `event_id`, a replay
    answers deduplicated."""
    access.require_scope(Scope.EDIT)
    partition = access.write_partition()
    key_lock(owner_id=access.user.pk, partition_id=partition.pk, key=key)
    target_id = f"{partition.pk}:{key}"
    if (
        event_id
        and MemoryEvent.objects.filter(
            owner=access.user, action="memory.delete", target_id=target_id, after__eventId=event_id
        ).exists()
    ):
        return _deleted(key, retired=0, erased=0, history_kept=not erase_history, deduplicated=True)
    revisions = Claim.objects.filter(owner=access.user, partition=partition, key=key)
    if erase_history:
        erased = list(revisions.values_list("pk", flat=True))
        retired = 0
        if not erased:
            raise NotFound("No memory with this key.", details={"key": key})
        claims_erase(owner=access.user, claim_ids=set(erased))
    else:
        erased = []
        now = timezone.now()
        retired = revisions.filter(status__in=[ClaimStatus.ACTIVE, ClaimStatus.QUARANTINED]).update(
            status=ClaimStatus.EXPIRED, expires_at=now, valid_until=now, updated_at=now
        )
        if not retired:
            raise NotFound("No current memory with this key.", details={"key": key})
    audit_record(
        actor=access.actor, owner=access.user, action="memory.delete", partition=partition,
        target_type="memory", target_id=target_id,
        after={"eventId": event_id, "retired": retired, "erased": len(erased), "eraseHistory": erase_history},
    )  # fmt: skip
    return _deleted(key, retired=retired, erased=len(erased), history_kept=not erase_history, deduplicated=False)


def _deleted(key: str, *, retired: int, erased: int, history_kept: bool, deduplicated: bool) -> dict[str, Any]:
    return {
        "key": key,
        "retiredRevisions": retired,
        "erasedRevisions": erased,
        "historyKept": history_kept,
        "deduplicated": deduplicated,
    }

"""Keyed memories (seeds/004): addressable claims saved by key, exactly once per `event_id`, screened on
write, read back before the acknowledgement, every save a revision (history kept)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.access import Access
from memory.errors import NotFound, ValidationFailed
from memory.models import Claim, ClaimKind, ClaimOrigin, ClaimStatus, MemoryEvent, Scope
from memory.screening import quarantines, sanitize_text, sanitize_value
from memory.services.audit import audit_erase_target, audit_record
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


def _current(access: Access, key: str) -> Claim | None:
    partition = access.write_partition()
    return (
        Claim.objects.select_for_update()
        .filter(
            owner=access.user, partition=partition, key=key, status__in=[ClaimStatus.ACTIVE, ClaimStatus.QUARANTINED]
        )
        .order_by("-recorded_at")
        .first()
    )


def _ack(claim: Claim, *, deduplicated: bool) -> SaveAck:
    stored = Claim.objects.filter(pk=claim.pk).values("value", "status").first()
    return SaveAck(
        claim=claim,
        deduplicated=deduplicated,
        quarantined=claim.status == ClaimStatus.QUARANTINED,
        verified_persisted=stored is not None and stored["value"] == claim.value,
    )


@transaction.atomic
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
    """Save `value` under `key` in the strict partition. The same `event_id` again returns the first result
    (deduplicated); the same value again is deduplicated too; a new value supersedes the previous revision."""
    access.require_scope(Scope.WRITE)
    key = key.strip()
    if not key:
        raise ValidationFailed("A memory needs a key.", details={"key": ["Required."]})
    if event_id and (earlier := Claim.objects.filter(owner=access.user, event_id=event_id).first()):
        return _ack(earlier, deduplicated=True)
    value, meta = sanitize_value(value), sanitize_value(meta or {})
    statement = statement_for(value)
    if len(statement.encode()) > MAX_VALUE_BYTES:
        raise ValidationFailed("The value is too large.", details={"value": [f"At most {MAX_VALUE_BYTES} bytes."]})
    quarantine = quarantines(origin, statement)
    previous = _current(access, key)
    if previous is not None and previous.value == value and previous.kind == kind and not quarantine:
        return _ack(previous, deduplicated=True)
    now = timezone.now()
    try:
        with transaction.atomic():
            claim = Claim.objects.create(
                owner=access.user,
                partition=access.write_partition(),
                statement=sanitize_text(f"{key}: {statement}"),
                kind=kind,
                key=key,
                value=value,
                meta=meta,
                status=ClaimStatus.QUARANTINED if quarantine else ClaimStatus.ACTIVE,
                origin=origin,
                derived_from=previous,
                event_id=event_id,
                valid_from=now,
                stated_at=now,
            )
    except IntegrityError:  # the same event_id was saved concurrently: that first save is the answer
        return _ack(Claim.objects.get(owner=access.user, event_id=event_id), deduplicated=True)
    if previous is not None and not quarantine:
        previous.status, previous.superseded_by, previous.valid_until = ClaimStatus.SUPERSEDED, claim, now
        previous.save(update_fields=["status", "superseded_by", "valid_until", "updated_at"])
    audit_record(
        actor=access.actor, owner=access.user, action="memory.save", target=claim, partition=claim.partition,
        after={"key": key, "status": claim.status, "origin": origin},
    )  # fmt: skip
    vectors_follow(access.user.pk)
    return _ack(claim, deduplicated=False)


@transaction.atomic
def memory_delete(*, access: Access, key: str, event_id: str = "") -> dict[str, Any]:
    """Erase every revision of a key (needs `edit`). With `event_id`, a replay answers deduplicated."""
    access.require_scope(Scope.EDIT)
    partition = access.write_partition()
    if (
        event_id
        and MemoryEvent.objects.filter(
            owner=access.user, action="memory.delete", target_id=f"{partition.pk}:{key}", after__eventId=event_id
        ).exists()
    ):
        return {"key": key, "erasedRevisions": 0, "deduplicated": True}
    revisions = list(Claim.objects.filter(owner=access.user, partition=partition, key=key))
    if not revisions:
        raise NotFound("No memory with this key.", details={"key": key})
    for revision in revisions:
        audit_erase_target(owner=access.user, target_type="claim", target_id=revision.pk)
    Claim.objects.filter(pk__in=[revision.pk for revision in revisions]).delete()
    audit_record(
        actor=access.actor, owner=access.user, action="memory.delete", partition=partition,
        target_type="memory", target_id=f"{partition.pk}:{key}",
        after={"eventId": event_id, "revisions": len(revisions)},
    )  # fmt: skip
    return {"key": key, "erasedRevisions": len(revisions), "deduplicated": False}

"""Review decisions on a suggested claim (held back by reconcile because it conflicts with an active one):
accept it (it supersedes the old), keep the old (it is retracted), or keep both (it becomes active too).
Each decision takes the same locks as the claim services, and writes one audit row on the suggestion, so the
claim's history shows it; `review_undo` takes the latest decision back from that row while nothing it touched
has changed since."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.access import Access
from memory.errors import Conflict
from memory.models import Claim, ClaimStatus, MemoryEvent, Scope
from memory.selectors import current_revision
from memory.services.audit import audit_record
from memory.services.claims import _claim_for_write


def _suggestion(access: Access, claim_id: str) -> Claim:
    access.require_scope(Scope.EDIT)
    claim = _claim_for_write(access, claim_id)
    access.check_write(claim.partition)
    if claim.status != ClaimStatus.SUGGESTED:
        raise Conflict(
            f"A {claim.status} claim is not waiting for review.",
            details={"claimId": claim_id, "status": claim.status},
        )
    return claim


DECISIONS = ("review.accept", "review.keep_old", "review.keep_both")


def _decided(
    access: Access, claim: Claim, action: str, old: Claim | None, before: str, **until: datetime | None
) -> Claim:
    """The audit row of a decision. `until` holds the end of validity each claim had before, when the decision
    set one (`validUntil`, `oldValidUntil`), so an undo puts back exactly what was there."""
    audit_record(
        actor=access.actor,
        owner=access.user,
        action=action,
        target=claim,
        partition=claim.partition,
        before={
            "status": before,
            "conflictsWith": str(old.pk) if old else "",
            **{key: moment.isoformat() if moment else "" for key, moment in until.items()},
        },
        after={"status": claim.status},
    )
    return claim


@transaction.atomic
def review_accept(*, access: Access, claim_id: str) -> Claim:
    """The suggestion is right: it becomes active and the claim it conflicts with is superseded by it."""
    claim = _suggestion(access, claim_id)
    old = claim.conflicts_with
    until: dict[str, datetime | None] = {}
    if old is not None:  # corrected since the suggestion arrived: the correction is what it replaces
        old = _claim_for_write(access, str(current_revision(old).pk))
        if old.status == ClaimStatus.ACTIVE:
            until["oldValidUntil"] = old.valid_until
            old.status, old.superseded_by = ClaimStatus.SUPERSEDED, claim
            old.valid_until = old.valid_until or timezone.now()
            old.save(update_fields=["status", "superseded_by", "valid_until", "updated_at"])
    claim.status = ClaimStatus.ACTIVE
    claim.save(update_fields=["status", "updated_at"])
    return _decided(access, claim, "review.accept", old, ClaimStatus.SUGGESTED, **until)


@transaction.atomic
def review_keep_old(*, access: Access, claim_id: str) -> Claim:
    """The old claim stands: the suggestion is dismissed (retracted, kept for the record)."""
    claim = _suggestion(access, claim_id)
    before = claim.valid_until
    claim.status, claim.valid_until = ClaimStatus.RETRACTED, claim.valid_until or timezone.now()
    claim.save(update_fields=["status", "valid_until", "updated_at"])
    return _decided(access, claim, "review.keep_old", claim.conflicts_with, ClaimStatus.SUGGESTED, validUntil=before)


@transaction.atomic
def review_keep_both(*, access: Access, claim_id: str) -> Claim:
    """Both are true (e.g. two different things): the suggestion becomes active next to the old one."""
    claim = _suggestion(access, claim_id)
    claim.status = ClaimStatus.ACTIVE
    claim.save(update_fields=["status", "updated_at"])
    return _decided(access, claim, "review.keep_both", claim.conflicts_with, ClaimStatus.SUGGESTED)


def latest_decision(claim: Claim) -> MemoryEvent | None:
    """The decision `review_undo` would take back: the claim's newest review row, when it is a decision (not an
    undo) and the claim still has the status that decision gave it."""
    event = MemoryEvent.objects.filter(
        owner_id=claim.owner_id, target_type="claim", target_id=claim.pk, action__startswith="review."
    ).first()  # newest first (the model's ordering)
    if event is None or event.action not in DECISIONS or (event.after or {}).get("status") != claim.status:
        return None
    return event


@transaction.atomic
def review_undo(*, access: Access, claim_id: str) -> Claim:
    """Take back the latest review decision on a claim: it is a suggestion waiting for review again, and after
    an accept the claim it replaced is current again. Refused when the claim, or the replaced one, changed since
    the decision (a later correction, retraction or erase is undone on its own terms)."""
    access.require_scope(Scope.EDIT)
    claim = _claim_for_write(access, claim_id)
    access.check_write(claim.partition)
    decision = latest_decision(claim)
    if decision is None:
        raise Conflict(
            "This claim has no review decision to take back, or it changed since.",
            details={"claimId": claim_id, "status": claim.status},
        )
    before = decision.before or {}
    if decision.action == "review.accept" and before.get("conflictsWith"):
        old = _claim_for_write(access, str(before["conflictsWith"]))
        if old.status != ClaimStatus.SUPERSEDED or old.superseded_by_id != claim.pk:
            raise Conflict(
                "The claim this one replaced has changed since, so the decision cannot be taken back.",
                details={"claimId": claim_id, "conflictsWith": old.pk, "status": old.status},
            )
        old.status, old.superseded_by = ClaimStatus.ACTIVE, None
        old.valid_until = _moment(before.get("oldValidUntil"))
        old.save(update_fields=["status", "superseded_by", "valid_until", "updated_at"])
    if decision.action == "review.keep_old":
        claim.valid_until = _moment(before.get("validUntil"))
    undone = claim.status
    claim.status = ClaimStatus.SUGGESTED
    claim.save(update_fields=["status", "valid_until", "updated_at"])
    audit_record(
        actor=access.actor, owner=access.user, action="review.undo", target=claim, partition=claim.partition,
        before={"status": undone, "decision": decision.action, "decisionId": decision.pk},
        after={"status": claim.status},
    )  # fmt: skip
    return claim


def _moment(value: object) -> datetime | None:
    return parse_datetime(value) if isinstance(value, str) and value else None

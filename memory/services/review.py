"""Review decisions on a suggested claim (held back by reconcile because it conflicts with an active one):
accept it (it supersedes the old), keep the old (it is retracted), or keep both (it becomes active too).
Each decision takes the same locks as the claim services, and writes one audit row on the suggestion, so the
claim's history shows it."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from memory.access import Access
from memory.errors import Conflict
from memory.models import Claim, ClaimStatus, Scope
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


def _decided(access: Access, claim: Claim, action: str, old: Claim | None, before: str) -> Claim:
    audit_record(
        actor=access.actor,
        owner=access.user,
        action=action,
        target=claim,
        partition=claim.partition,
        before={"status": before, "conflictsWith": str(old.pk) if old else ""},
        after={"status": claim.status},
    )
    return claim


@transaction.atomic
def review_accept(*, access: Access, claim_id: str) -> Claim:
    """The suggestion is right: it becomes active and the claim it conflicts with is superseded by it."""
    claim = _suggestion(access, claim_id)
    old = claim.conflicts_with
    now = timezone.now()
    if old is not None:
        old = _claim_for_write(access, str(old.pk))
        if old.status == ClaimStatus.ACTIVE:
            old.status, old.superseded_by, old.valid_until = ClaimStatus.SUPERSEDED, claim, old.valid_until or now
            old.save(update_fields=["status", "superseded_by", "valid_until", "updated_at"])
    claim.status = ClaimStatus.ACTIVE
    claim.save(update_fields=["status", "updated_at"])
    return _decided(access, claim, "review.accept", old, ClaimStatus.SUGGESTED)


@transaction.atomic
def review_keep_old(*, access: Access, claim_id: str) -> Claim:
    """The old claim stands: the suggestion is dismissed (retracted, kept for the record)."""
    claim = _suggestion(access, claim_id)
    claim.status, claim.valid_until = ClaimStatus.RETRACTED, claim.valid_until or timezone.now()
    claim.save(update_fields=["status", "valid_until", "updated_at"])
    return _decided(access, claim, "review.keep_old", claim.conflicts_with, ClaimStatus.SUGGESTED)


@transaction.atomic
def review_keep_both(*, access: Access, claim_id: str) -> Claim:
    """Both are true (e.g. two different things): the suggestion becomes active next to the old one."""
    claim = _suggestion(access, claim_id)
    claim.status = ClaimStatus.ACTIVE
    claim.save(update_fields=["status", "updated_at"])
    return _decided(access, claim, "review.keep_both", claim.conflicts_with, ClaimStatus.SUGGESTED)

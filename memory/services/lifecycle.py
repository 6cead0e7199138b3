"""Time-driven changes to claims, run by Celery beat (SPEC §11): claims past their `expires_at` (working context
after 14 days) become `expired`, and old inferred claims are flagged `needs_reverification` (trust decay).

Pinned claims are left alone by both. Each change writes a MemoryEvent, like any other change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory.access import Actor
from memory.models import Claim, ClaimOrigin, ClaimStatus, Evidence
from memory.services.audit import audit_record

# Claims whose truth rests on someone's inference rather than the owner's word.
DECAYING_ORIGINS = (ClaimOrigin.ASSISTANT_INFERRED, ClaimOrigin.IMPORTED)
BATCH = 500


@dataclass(frozen=True)
class MaintenanceResult:
    expired: int
    flagged: int

    def as_dict(self) -> dict[str, int]:
        return {"expired": self.expired, "flaggedForReverification": self.flagged}


def _within(claims: QuerySet[Claim], owner_id: int | None, partition_ids: list[str] | None) -> QuerySet[Claim]:
    """Everyone's claims for beat; one owner's, and only the partitions a token may reach, for /cleanup."""
    claims = claims.filter(owner_id=owner_id) if owner_id is not None else claims
    return claims.filter(partition_id__in=partition_ids) if partition_ids is not None else claims


def expire_due_claims(
    now: datetime | None = None, owner_id: int | None = None, partition_ids: list[str] | None = None
) -> int:
    """Current claims whose `expires_at` has passed become `expired` (valid_until = expires_at)."""
    now = now or timezone.now()
    current = [ClaimStatus.ACTIVE, ClaimStatus.SUGGESTED]
    due = Claim.objects.filter(status__in=current, expires_at__lte=now, pinned=False)
    due = _within(due, owner_id, partition_ids).select_related("owner", "partition")
    changed = 0
    for claim in due.order_by("expires_at")[:BATCH]:
        with transaction.atomic():
            # Conditional, so a concurrent run or edit is never counted (or audited) twice.
            if not Claim.objects.filter(pk=claim.pk, status__in=current, pinned=False).update(
                status=ClaimStatus.EXPIRED, valid_until=Coalesce(F("valid_until"), F("expires_at")), updated_at=now
            ):
                continue
            audit_record(
                actor=Actor.system(), owner=claim.owner, action="claim.expire", target=claim,
                partition=claim.partition, before={"status": claim.status},
                after={"status": ClaimStatus.EXPIRED, "reason": "expires_at passed"},
            )  # fmt: skip
            changed += 1
    return changed


def decayed_inference(now: datetime) -> Q:
    """The condition of trust decay: an active, unpinned inferred claim stated more than `REVERIFY_AFTER_DAYS`
    ago with no evidence since. Shared by the sweep below and the coordination health report."""
    cutoff = now - timedelta(days=settings.REVERIFY_AFTER_DAYS)
    newer_evidence = Evidence.objects.filter(claim=OuterRef("pk"), created_at__gte=cutoff)
    return Q(
        Q(status=ClaimStatus.ACTIVE, origin__in=DECAYING_ORIGINS, stated_at__lt=cutoff, pinned=False),
        ~Exists(newer_evidence),
    )


def flag_stale_inferences(
    now: datetime | None = None, owner_id: int | None = None, partition_ids: list[str] | None = None
) -> int:
    """Active inferred claims with no evidence newer than `REVERIFY_AFTER_DAYS` get `needs_reverification`;
    new evidence lifts it again (reconcile)."""
    now = now or timezone.now()
    stale = Claim.objects.filter(decayed_inference(now), needs_reverification=False).select_related(
        "owner", "partition"
    )
    stale = _within(stale, owner_id, partition_ids)
    changed = 0
    for claim in stale.order_by("id")[:BATCH]:
        with transaction.atomic():
            if not Claim.objects.filter(pk=claim.pk, needs_reverification=False).update(
                needs_reverification=True, updated_at=now
            ):
                continue
            audit_record(
                actor=Actor.system(), owner=claim.owner, action="claim.flag_reverification", target=claim,
                partition=claim.partition, after={"needsReverification": True},
            )  # fmt: skip
            changed += 1
    return changed


def run_maintenance(
    now: datetime | None = None, owner_id: int | None = None, partition_ids: list[str] | None = None
) -> MaintenanceResult:
    """Both sweeps (for everyone, or one owner's given partitions), batch after batch until nothing is left."""
    expired = flagged = 0
    while (done := expire_due_claims(now, owner_id, partition_ids)) > 0:
        expired += done
    while (done := flag_stale_inferences(now, owner_id, partition_ids)) > 0:
        flagged += done
    return MaintenanceResult(expired=expired, flagged=flagged)

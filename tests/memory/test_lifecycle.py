"""Time-driven claim changes: expiry when `expires_at` passes, and trust decay of old inferred claims."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from memory.models import Claim, Evidence, MemoryEvent
from memory.services.lifecycle import run_maintenance
from memory.tasks import maintain_claims
from tests.factories import ClaimFactory

pytestmark = pytest.mark.django_db


def days_ago(days: int) -> Any:
    return timezone.now() - timedelta(days=days)


def test_claims_past_their_expiry_become_expired_and_pinned_ones_stay(alice) -> None:
    due = ClaimFactory.create(owner=alice, kind="working_context", expires_at=days_ago(1))
    pinned = ClaimFactory.create(owner=alice, kind="working_context", expires_at=days_ago(1), pinned=True)
    later = ClaimFactory.create(owner=alice, kind="working_context", expires_at=timezone.now() + timedelta(days=3))
    assert run_maintenance().expired == 1
    due.refresh_from_db()
    assert (due.status, due.valid_until) == ("expired", due.expires_at)
    assert Claim.objects.get(pk=pinned.pk).status == "active"
    assert Claim.objects.get(pk=later.pk).status == "active"
    assert MemoryEvent.objects.filter(action="claim.expire", target_id=due.pk, actor_kind="system").count() == 1
    assert run_maintenance().expired == 0  # nothing is expired twice


def test_old_inferred_claims_are_flagged_for_reverification(alice, settings: Any) -> None:
    settings.REVERIFY_AFTER_DAYS = 90
    old = ClaimFactory.create(owner=alice, origin="assistant_inferred", stated_at=days_ago(120))
    fresh = ClaimFactory.create(owner=alice, origin="assistant_inferred", stated_at=days_ago(10))
    stated = ClaimFactory.create(owner=alice, origin="user_stated", stated_at=days_ago(400))
    pinned = ClaimFactory.create(owner=alice, origin="assistant_inferred", stated_at=days_ago(400), pinned=True)
    assert run_maintenance().flagged == 1
    flags = dict(Claim.objects.values_list("pk", "needs_reverification"))
    assert flags == {old.pk: True, fresh.pk: False, stated.pk: False, pinned.pk: False}
    assert MemoryEvent.objects.filter(action="claim.flag_reverification", target_id=old.pk).exists()
    assert run_maintenance().flagged == 0


def test_recent_evidence_keeps_an_old_inferred_claim_trusted(alice) -> None:
    from memory.access import access_for_user
    from memory.services.ingestion import DocumentIn, ingest_document

    claim = ClaimFactory.create(owner=alice, origin="assistant_inferred", stated_at=days_ago(200))
    receipt = ingest_document(access=access_for_user(user=alice), document=DocumentIn(id="d", content="Seen again."))
    Evidence.objects.create(owner=alice, claim=claim, source=receipt.source, excerpt="Seen again.")
    assert run_maintenance().flagged == 0
    assert Claim.objects.get(pk=claim.pk).needs_reverification is False


def test_the_beat_task_runs_both_sweeps(alice) -> None:
    ClaimFactory.create(owner=alice, expires_at=days_ago(2))
    ClaimFactory.create(owner=alice, origin="imported", stated_at=days_ago(365))
    assert maintain_claims() == {"expired": 1, "flaggedForReverification": 1}

"""bench/lived_in.py: a benchmark store's claims get the history a memory in use has (the audit trail dated with its
claims, the call log, metrics), once; a store rebuilt since gets it again, not twice."""

from __future__ import annotations

import pytest
from django.test import Client

from bench.lived_in import lived_in
from memory.models import Claim, MemoryEvent, ToolEvent, User
from metrics.models import MetricDefinition, Observation
from tests.factories import ClaimFactory

pytestmark = pytest.mark.django_db(transaction=True)  # it ends with VACUUM ANALYZE, outside any transaction


def test_claims_get_their_history_once(alice: User, client: Client) -> None:
    ClaimFactory.create_batch(40, owner=alice)
    added = lived_in(alice, calls=2)
    assert added["tool events"] == 80 and added["readings"] == 20 and added["metrics"] == 20
    extracted = MemoryEvent.objects.filter(owner=alice, action="claim.extract")
    assert extracted.count() == 40
    recorded = dict(Claim.objects.filter(owner=alice).values_list("id", "recorded_at"))
    assert all(event.created_at == recorded[event.target_id] for event in extracted)  # dated with its claim
    assert MemoryEvent.objects.filter(owner=alice, action="metric.observe").count() == 20
    assert Observation.objects.filter(owner=alice).count() == 20
    assert lived_in(alice, calls=2) == {}  # kept
    ClaimFactory.create(owner=alice)  # as a rebuilt store: its claims are not the ones the history was made for
    assert lived_in(alice, calls=2)["tool events"] == 82
    assert ToolEvent.objects.filter(owner=alice).count() == 82  # made again, not added to
    times = list(ToolEvent.objects.filter(owner=alice).order_by("pk").values_list("created_at", flat=True))
    assert times == sorted(times) and times[0] < times[-1]  # ids follow time, as the writer numbers calls
    assert MetricDefinition.objects.filter(owner=alice).count() == 20
    client.force_login(alice)
    page = client.get("/ui/activity/?action=claim.extract")
    assert page.status_code == 200 and "Learned from a source" in page.content.decode()

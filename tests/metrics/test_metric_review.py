"""Deciding on a metric flagged as a near-duplicate: keep it as new, or merge it into the one it resembles."""

from __future__ import annotations

import pytest

from memory.access import Access, access_for_user
from memory.errors import Conflict, NotFound
from memory.models import Claim, MemoryEvent
from metrics.models import MetricDefinition, Observation
from metrics.services import metric_keep, metric_merge
from tests.conftest import Api, Persona
from tests.metrics.test_metrics_api import record

pytestmark = pytest.mark.django_db
AT = "2026-03-01T07:00:00Z"


def access(persona: Persona) -> Access:
    assert persona.user is not None
    return access_for_user(user=persona.user)


def flagged(api: Api, owner: Persona) -> tuple[MetricDefinition, MetricDefinition]:
    """Body weight, then "Weight kg": the second is flagged as resembling the first (MiniLM, cosine 0.94)."""
    record(api, owner, "body_weight", 80.0, AT, label="Body weight", unit="kg")
    record(api, owner, "weight_kg", 80.4, "2026-03-02T07:00:00Z", label="Weight", unit="kg")
    record(api, owner, "weight_kg", 80.2, "2026-03-03T07:00:00Z")
    weight = MetricDefinition.objects.get(slug="body_weight")
    duplicate = MetricDefinition.objects.get(slug="weight_kg")
    assert (duplicate.needs_review, duplicate.resembles_id) == (True, weight.pk)
    return weight, duplicate


def review_task_status(duplicate: MetricDefinition) -> str:
    return str(Claim.objects.get(subject=duplicate.review_task, status="active").object_value)


def test_keep_as_new_lifts_the_flag_and_closes_the_review_task(api: Api, owner: Persona) -> None:
    _, duplicate = flagged(api, owner)
    assert review_task_status(duplicate) == "pending"
    metric_keep(access(owner), metric_id=duplicate.pk)
    duplicate.refresh_from_db()
    assert duplicate.needs_review is False
    assert review_task_status(duplicate) == "completed"
    assert MemoryEvent.objects.filter(action="metric.keep", target_id=duplicate.pk).count() == 1
    with pytest.raises(Conflict):
        metric_keep(access(owner), metric_id=duplicate.pk)


def test_merge_moves_the_observations_and_deletes_the_duplicate(api: Api, owner: Persona) -> None:
    weight, duplicate = flagged(api, owner)
    task = duplicate.review_task
    merged = metric_merge(access(owner), metric_id=duplicate.pk)
    assert merged.pk == weight.pk
    assert not MetricDefinition.objects.filter(pk=duplicate.pk).exists()
    assert sorted(Observation.objects.filter(definition=weight).values_list("value", flat=True)) == [80.0, 80.2, 80.4]
    assert str(Claim.objects.get(subject=task, status="active").object_value) == "completed"
    event = MemoryEvent.objects.get(action="metric.merge", target_id=weight.pk)
    assert event.before is not None and event.after is not None
    assert (event.before["metric"], event.after["moved"]) == ("weight_kg", 2)


@pytest.mark.parametrize("decide", [metric_keep, metric_merge])
def test_another_persons_metric_is_not_found(api: Api, owner: Persona, other: Persona, decide: object) -> None:
    _, duplicate = flagged(api, owner)
    with pytest.raises(NotFound):
        decide(access(other), metric_id=duplicate.pk)  # type: ignore[operator]
    assert MetricDefinition.objects.get(pk=duplicate.pk).needs_review is True

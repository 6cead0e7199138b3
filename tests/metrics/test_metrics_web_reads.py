"""What the metric pages read and write: metrics_overview, readings, reading_for_access (metrics.selectors) and
metric_observe (metrics.services), the hand-added reading of the web form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.access import access_for_user
from memory.errors import NotFound, PartitionInactive, ValidationFailed
from memory.models import User
from metrics.models import MetricDefinition, Observation
from metrics.selectors import metrics_overview, reading_for_access, readings
from metrics.services import metric_observe, observation_record
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db

DAY = datetime(2026, 11, 20, 7, 0, tzinfo=UTC)


def weights(user: User, *values: float, partition_key: str | None = None) -> list[Observation]:
    access = access_for_user(user=user, partition_key=partition_key)
    return [
        observation_record(access, slug="body_weight", value=value, occurred_at=DAY + timedelta(days=n), unit="kg")[0]
        for n, value in enumerate(values)
    ]


def test_a_hand_added_reading_goes_to_the_metric_in_its_own_partition(alice: User) -> None:
    PartitionFactory.create(owner=alice, key="project:fit", label="Fitness")
    weights(alice, 80.0, partition_key="project:fit")
    workspace = access_for_user(user=alice, workspace=True)
    metric = MetricDefinition.objects.get(slug="body_weight")
    added = metric_observe(workspace, slug=metric.slug, value=79.5, occurred_at=DAY, note="by hand")
    assert (added.definition_id, added.note) == (metric.pk, "by hand")
    assert MetricDefinition.objects.filter(owner=alice).count() == 1  # no body_weight started in Personal


@pytest.mark.parametrize(
    ("value", "when", "note", "field"),
    [
        (float("inf"), DAY, "", "value"),
        (float("nan"), DAY, "", "value"),
        (2e15, DAY, "", "value"),
        (80.0, datetime(3100, 1, 1, tzinfo=UTC), "", "occurredAt"),
        (80.0, DAY, "x" * 501, "note"),
    ],
)
def test_a_hand_added_reading_must_be_usable(alice: User, value: float, when: datetime, note: str, field: str) -> None:
    weights(alice, 80.0)
    with pytest.raises(ValidationFailed) as refused:
        metric_observe(access_for_user(user=alice), slug="body_weight", value=value, occurred_at=when, note=note)
    assert list(refused.value.details) == [field]
    assert Observation.objects.count() == 1


def test_a_hand_added_reading_needs_a_metric_in_reach_and_an_active_partition(alice: User, bob: User) -> None:
    weights(bob, 70.0)  # bob has a body_weight, alice has none
    with pytest.raises(NotFound):
        metric_observe(access_for_user(user=alice), slug="body_weight", value=1.0, occurred_at=DAY)
    PartitionFactory.create(owner=alice, key="project:old", label="Old")
    [old] = weights(alice, 80.0, partition_key="project:old")
    old.definition.partition.is_active = False
    old.definition.partition.save()
    strict = access_for_user(user=alice, partition_key="project:old")
    with pytest.raises(PartitionInactive):
        metric_observe(strict, slug="body_weight", value=1.0, occurred_at=DAY)
    assert Observation.objects.count() == 2


def test_readings_are_newest_first_within_the_range(alice: User) -> None:
    first, second, third = weights(alice, 80.0, 79.0, 78.0)
    definition = first.definition
    assert [o.pk for o in readings(definition)] == [third.pk, second.pk, first.pk]
    inside = readings(definition, since=DAY + timedelta(hours=1), until=DAY + timedelta(days=2))
    assert [o.pk for o in inside] == [second.pk]


def test_a_reading_is_found_only_under_its_own_metric_and_owner(alice: User, bob: User) -> None:
    [weight] = weights(alice, 80.0)
    access = access_for_user(user=alice)
    observation_record(access, slug="steps", value=9000, occurred_at=DAY)
    assert reading_for_access(access, slug="body_weight", observation_id=weight.pk) == weight
    with pytest.raises(NotFound):
        reading_for_access(access, slug="steps", observation_id=weight.pk)
    with pytest.raises(NotFound):
        reading_for_access(access_for_user(user=bob), slug="body_weight", observation_id=weight.pk)
    weights(bob, 70.0)  # his own body_weight does not reach hers
    with pytest.raises(NotFound):
        reading_for_access(access_for_user(user=bob), slug="body_weight", observation_id=weight.pk)


def test_the_overview_takes_the_same_queries_for_any_number_of_metrics(alice: User, django_assert_num_queries) -> None:
    access = access_for_user(user=alice)
    for slug in ("body_weight", "steps", "sleep_hours"):
        observation_record(access, slug=slug, value=7, occurred_at=DAY)
    with django_assert_num_queries(4):
        overview = metrics_overview(access)
    assert [(item.definition.slug, item.summary["latest"]["value"]) for item in overview] == [
        ("body_weight", 7), ("sleep_hours", 7), ("steps", 7)
    ]  # fmt: skip


def test_the_overview_gives_the_daily_means_of_the_last_90_days_in_the_time_zone(alice: User) -> None:
    access = access_for_user(user=alice)
    now = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=1)
    for at, value in ((now - timedelta(days=120), 90.0), (now - timedelta(days=10), 81.0),
                      (now - timedelta(days=10, hours=2), 83.0), (now, 80.0)):  # fmt: skip
        observation_record(access, slug="body_weight", value=value, occurred_at=at)
    [item] = metrics_overview(access)
    assert item.recent == [82.0, 80.0]  # the reading of 120 days ago is out, two on one day are one mean
    # 12:00 and 10:00 UTC are on two days in a zone 13 hours ahead (01:00 and 23:00 there).
    [ahead] = metrics_overview(access, zone_name="Pacific/Tongatapu")
    assert ahead.recent == [83.0, 81.0, 80.0]

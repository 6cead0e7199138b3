"""Metrics over REST (seeds/000): a metric is created or reused by slug, a near-duplicate is flagged for review
with a candidate task, bulk imports store what they can, series are bucketed in a time zone, summaries give
exact window stats and a trend for one or many metrics, the digest lists the movers, and nobody but the owner
(within the token's partitions) sees any of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import Partition, Scope, User
from metrics.models import MetricDefinition, Observation
from metrics.selectors import summaries
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db

NOW = datetime.now(UTC).replace(microsecond=0)  # read again as each test starts (below)


@pytest.fixture(autouse=True)
def _now() -> None:
    """The clock as this test starts. Read once at import it was minutes or hours old by the time a test ran
    (a whole suite), so "yesterday" and "today" could fall on other days than the server's."""
    global NOW
    NOW = datetime.now(UTC).replace(microsecond=0)


ENDPOINTS: dict[str, dict[str, Any]] = {
    "/metrics/observations": {"slug": "body_weight", "value": 80.0},
    "/metrics/observations/bulk": {
        "observations": [{"slug": "body_weight", "value": 80.0, "occurredAt": "2026-03-29T07:00:00Z"}]
    },
    "/metrics/list": {},
    "/metrics/series": {"slug": "body_weight"},
    "/metrics/summary": {"slug": "body_weight"},
    "/metrics/summaries": {},
}
WRITES = ("/metrics/observations", "/metrics/observations/bulk")
AGGREGATIONS = ("mean", "sum", "last", "min", "max")


def ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.content
    return dict(response.json())


def refused(response: Any) -> tuple[int, str, dict[str, Any]]:
    code = error_code(response)
    return response.status_code, code, response.json()["error"]["details"]


def ago(days: float) -> str:
    return (NOW - timedelta(days=days)).isoformat()


def record(api: Api, persona: Persona, slug: str, value: float, at: str, **fields: Any) -> dict[str, Any]:
    """One observation through POST /metrics/observations."""
    return ok(
        api.post("/metrics/observations", persona, {"slug": slug, "value": value, "occurredAt": at, **fields}), 201
    )


def personal(user: User) -> Partition:
    return Partition.objects.get(owner=user, key="memory:personal")


def points(api: Api, persona: Persona, **body: Any) -> list[tuple[str, float, int]]:
    answer = ok(api.post("/metrics/series", persona, body))
    return [(point["at"], point["value"], point["count"]) for point in answer["points"]]


def task_ids(api: Api, persona: Persona, path: str, body: dict[str, Any]) -> list[str]:
    return [item["taskId"] for item in ok(api.post(path, persona, body))["commitments"]]


# Creating or reusing a metric


def test_a_second_observation_reuses_the_metric_of_its_slug(api: Api, owner: Persona) -> None:
    first = record(api, owner, "body_weight", 80.0, "2026-03-01T07:00:00Z", label="Body weight", unit="kg")
    second = record(api, owner, "body_weight", 79.5, "2026-03-02T07:00:00Z")
    assert (first["metricCreated"], second["metricCreated"]) == (True, False)
    assert second["metric"] == first["metric"]
    assert (second["value"], second["occurredAt"]) == (79.5, "2026-03-02T07:00:00Z")
    assert first["metric"] | {"metricId": None} == {
        "metricId": None, "slug": "body_weight", "label": "Body weight", "unit": "kg", "description": "",
        "aggregation": "mean", "aggregationHint": "avg", "needsReview": False, "resembles": None,
        "reviewTaskId": None, "partitionKey": "memory:personal",
    }  # fmt: skip
    assert MetricDefinition.objects.count() == 1
    assert sorted(Observation.objects.values_list("value", flat=True)) == [79.5, 80.0]


def test_a_slug_is_normalised_and_a_normalised_spelling_reuses_it(api: Api, owner: Persona) -> None:
    created = record(api, owner, "Resting-Heart-Rate", 58.0, "2026-03-01T07:00:00Z")
    assert (created["metricCreated"], created["metric"]["slug"]) == (True, "resting_heart_rate")
    assert created["metric"]["label"] == "Resting heart rate"
    reused = record(api, owner, "resting_heart_rate", 57.0, "2026-03-02T07:00:00Z")
    assert (reused["metricCreated"], reused["metric"]["metricId"]) == (False, created["metric"]["metricId"])
    assert list(MetricDefinition.objects.values_list("slug", flat=True)) == ["resting_heart_rate"]


@pytest.mark.parametrize("slug", ["body weight", "-weight", "weight!", "x" * 65])
def test_a_slug_outside_the_pattern_is_a_validation_error(api: Api, owner: Persona, slug: str) -> None:
    status, code, details = refused(api.post("/metrics/observations", owner, {"slug": slug, "value": 1.0}))
    assert (status, code, list(details)) == (400, "VALIDATION_ERROR", ["slug"])
    assert not MetricDefinition.objects.exists()


def test_the_aggregation_defaults_to_sum_for_counted_metrics_and_mean_otherwise(api: Api, owner: Persona) -> None:
    at = "2026-03-01T07:00:00Z"
    created = {
        slug: record(api, owner, slug, 1.0, at)["metric"]["aggregation"]
        for slug in ("steps", "daily_steps", "running_distance", "body_weight", "heart_rate")
    }
    assert created == {
        "steps": "sum", "daily_steps": "sum", "running_distance": "sum", "body_weight": "mean", "heart_rate": "mean",
    }  # fmt: skip
    assert record(api, owner, "readiness_score", 80.0, at, aggregation="last")["metric"]["aggregation"] == "last"
    # An existing metric keeps its definition: the hint of a later observation does not change it.
    assert record(api, owner, "steps", 2.0, at, aggregation="max", unit="count")["metric"]["aggregation"] == "sum"
    assert MetricDefinition.objects.get(slug="steps").unit == ""


def test_an_observation_without_occurred_at_is_stamped_now(api: Api, owner: Persona) -> None:
    before = datetime.now(UTC)
    answer = ok(api.post("/metrics/observations", owner, {"slug": "body_weight", "value": 80.0}), 201)
    stored = Observation.objects.get(pk=answer["observationId"])
    assert before <= stored.occurred_at <= datetime.now(UTC)


def test_the_seeds_body_with_a_metric_object_is_accepted_as_written(api: Api, owner: Persona) -> None:
    """seeds/000's single write example, verbatim apart from userId (the token's owner here)."""
    body = {
        "metric": {"slug": "body_weight", "label": "Body weight", "description": "Morning bathroom scale weight",
                   "unit": "kg", "aggregationHint": "avg"},
        "value": 78.2,
        "occurredAt": "2026-05-03T07:30:00Z",
        "note": "post-run",
    }  # fmt: skip
    answer = ok(api.post("/metrics/observations", owner, body), 201)
    assert (answer["metricCreated"], answer["value"], answer["occurredAt"]) == (True, 78.2, "2026-05-03T07:30:00Z")
    metric = answer["metric"]
    assert (metric["slug"], metric["label"], metric["description"], metric["unit"]) == (
        "body_weight", "Body weight", "Morning bathroom scale weight", "kg",
    )  # fmt: skip
    assert (metric["aggregationHint"], metric["aggregation"]) == ("avg", "mean")
    assert Observation.objects.get().note == "post-run"
    flat = record(api, owner, "body_weight", 78.0, "2026-05-04T07:30:00Z")
    assert (flat["metricCreated"], flat["metric"]["metricId"]) == (False, metric["metricId"])


@pytest.mark.parametrize("hint", ["sum", "last", "min", "max", "mean"])
def test_each_aggregation_hint_is_kept_and_answered(api: Api, owner: Persona, hint: str) -> None:
    body = {"metric": {"slug": "readiness_score", "aggregationHint": hint}, "value": 1.0}
    metric = ok(api.post("/metrics/observations", owner, body), 201)["metric"]
    assert (metric["aggregation"], metric["aggregationHint"]) == (hint, "avg" if hint == "mean" else hint)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"metric": {"label": "Body weight"}, "value": 1.0}, "metric"),
        ({"metric": {"slug": "body weight"}, "value": 1.0}, "metric"),
        ({"metric": {"slug": "body_weight", "aggregationHint": "median"}, "value": 1.0}, "metric"),
        ({"metric": {"slug": "body_weight", "colour": "blue"}, "value": 1.0}, "metric"),
        ({"metric": "body_weight", "value": 1.0}, "metric"),
        ({"metric": {"slug": "body_weight"}, "slug": "body_weight", "value": 1.0}, "metric"),
        ({"metric": {"slug": "body_weight"}, "unit": "kg", "value": 1.0}, "unit"),
    ],
)
def test_a_malformed_metric_object_is_a_validation_error_naming_the_field(
    api: Api, owner: Persona, body: dict[str, Any], field: str
) -> None:
    status, code, details = refused(api.post("/metrics/observations", owner, body))
    assert (status, code, list(details)) == (400, "VALIDATION_ERROR", [field])
    assert not MetricDefinition.objects.exists()


# Near-duplicates


def test_a_near_duplicate_metric_is_flagged_with_a_candidate_review_task(api: Api, owner: Persona) -> None:
    at = "2026-03-01T07:00:00Z"
    weight = record(api, owner, "body_weight", 80.0, at, label="Body weight", unit="kg")["metric"]
    # "Weight kg" against "Body weight kg": cosine 0.94 with the MiniLM embedder, over the 0.85 threshold.
    similar = record(api, owner, "weight_kg", 80.1, at, label="Weight", unit="kg")
    assert similar["metricCreated"] is True
    flagged = similar["metric"]
    assert (flagged["slug"], flagged["needsReview"], flagged["resembles"]) == ("weight_kg", True, weight["metricId"])
    assert flagged["reviewTaskId"] is not None
    candidates = ok(api.post("/commitments/list", owner, {"provenance": "candidate"}))["commitments"]
    assert [(item["taskId"], item["label"], item["status"]) for item in candidates] == [
        (
            flagged["reviewTaskId"],
            "Review metric Weight (weight_kg): it looks like Body weight (body_weight)",
            "pending",
        )
    ]
    assert task_ids(api, owner, "/commitments/open", {}) == []
    assert task_ids(api, owner, "/commitments/list", {"provenance": "trusted"}) == []
    # Reusing the flagged metric neither flags it again nor makes a second task.
    again = record(api, owner, "weight_kg", 80.2, at)
    assert (again["metricCreated"], again["metric"]) == (False, flagged)
    assert task_ids(api, owner, "/commitments/list", {"provenance": "candidate"}) == [flagged["reviewTaskId"]]


def test_an_unrelated_metric_is_not_flagged(api: Api, owner: Persona) -> None:
    at = "2026-03-01T07:00:00Z"
    record(api, owner, "body_weight", 80.0, at, label="Body weight", unit="kg")
    steps = record(api, owner, "steps", 9000.0, at)["metric"]
    assert (steps["needsReview"], steps["resembles"], steps["reviewTaskId"]) == (False, None, None)
    assert task_ids(api, owner, "/commitments/list", {"provenance": "all"}) == []


def test_a_similar_metric_of_another_user_or_partition_is_not_a_duplicate(
    api: Api, owner: Persona, other: Persona, alice: User
) -> None:
    at = "2026-03-01T07:00:00Z"
    record(api, owner, "body_weight", 80.0, at, label="Body weight", unit="kg")
    bobs = record(api, other, "weight_kg", 90.0, at, label="Weight", unit="kg")["metric"]
    PartitionFactory.create(owner=alice, key="project:apollo")
    project = record(api, owner, "weight_kg", 80.0, at, label="Weight", unit="kg", partitionKey="project:apollo")
    assert (bobs["needsReview"], bobs["resembles"]) == (False, None)
    assert (project["metric"]["needsReview"], project["metric"]["partitionKey"]) == (False, "project:apollo")


# Bulk


def test_bulk_stores_known_slugs_and_reports_unknown_ones_per_row(api: Api, owner: Persona) -> None:
    record(api, owner, "body_weight", 80.0, "2026-03-01T07:00:00Z")
    record(api, owner, "steps", 9000.0, "2026-03-01T20:00:00Z")
    rows = [
        {"slug": "body_weight", "value": 79.8, "occurredAt": "2026-03-02T07:00:00Z", "note": "after a run"},
        {"slug": "sleep_hours", "value": 7.5, "occurredAt": "2026-03-02T07:00:00Z"},
        {"slug": "steps", "value": 12000, "occurredAt": "2026-03-02T20:00:00Z"},
        {"slug": "mood", "value": 3, "occurredAt": "2026-03-02T20:00:00Z"},
    ]
    answer = ok(api.post("/metrics/observations/bulk", owner, {"observations": rows}))
    assert answer["stored"] == 2
    assert answer["errors"] == [
        {"index": 1, "slug": "sleep_hours",
         "error": {"code": "NOT_FOUND", "message": "No metric 'sleep_hours'; record one observation first."}},
        {"index": 3, "slug": "mood",
         "error": {"code": "NOT_FOUND", "message": "No metric 'mood'; record one observation first."}},
    ]  # fmt: skip
    stored = Observation.objects.filter(pk__in=answer["observationIds"]).select_related("definition")
    assert sorted((o.definition.slug, o.value, o.occurred_at, o.note) for o in stored) == [
        ("body_weight", 79.8, datetime(2026, 3, 2, 7, tzinfo=UTC), "after a run"),
        ("steps", 12000.0, datetime(2026, 3, 2, 20, tzinfo=UTC), ""),
    ]
    assert sorted(MetricDefinition.objects.values_list("slug", flat=True)) == ["body_weight", "steps"]


def test_bulk_of_only_unknown_slugs_stores_nothing(api: Api, owner: Persona) -> None:
    rows = [{"slug": "mood", "value": 3, "occurredAt": "2026-03-02T20:00:00Z"}]
    answer = ok(api.post("/metrics/observations/bulk", owner, {"observations": rows}))
    assert (answer["stored"], answer["observationIds"], [e["index"] for e in answer["errors"]]) == (0, [], [0])
    assert not Observation.objects.exists()
    assert not MetricDefinition.objects.exists()


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({"slug": "body_weight", "value": 1.0}, "occurredAt", "This field is required."),
        ({"slug": "body_weight", "value": "heavy", "occurredAt": "2026-03-02T07:00:00Z"}, "value",
         "A valid number is required."),
        ({"slug": "body_weight", "occurredAt": "2026-03-02T07:00:00Z"}, "value", "This field is required."),
        ({"slug": "body weight", "value": 1.0, "occurredAt": "2026-03-02T07:00:00Z"}, "slug", None),
        ({"slug": "body_weight", "value": 1.0, "occurredAt": "yesterday"}, "occurredAt", None),
    ],
)  # fmt: skip
def test_an_invalid_bulk_row_rejects_the_whole_request_naming_the_row_and_field(
    api: Api, owner: Persona, row: dict[str, Any], field: str, message: str | None
) -> None:
    record(api, owner, "body_weight", 80.0, "2026-03-01T07:00:00Z")
    good = {"slug": "body_weight", "value": 79.0, "occurredAt": "2026-03-02T07:00:00Z"}
    status, code, details = refused(api.post("/metrics/observations/bulk", owner, {"observations": [good, row]}))
    assert (status, code, list(details)) == (400, "VALIDATION_ERROR", ["observations"])
    assert list(details["observations"]) == ["1"]  # the row at index 1, by the field it got wrong
    assert list(details["observations"]["1"]) == [field]
    if message is not None:
        assert details["observations"]["1"][field] == [message]
    assert Observation.objects.count() == 1


def test_bulk_takes_at_most_a_thousand_rows(api: Api, owner: Persona) -> None:
    record(api, owner, "steps", 1.0, "2026-01-01T00:00:00Z")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {"slug": "steps", "value": n, "occurredAt": (start + timedelta(minutes=n + 1)).isoformat()} for n in range(1001)
    ]
    status, code, details = refused(api.post("/metrics/observations/bulk", owner, {"observations": rows}))
    assert (status, code) == (400, "VALIDATION_ERROR")
    assert details == {"observations": ["Ensure this field has no more than 1000 elements."]}
    assert Observation.objects.count() == 1
    assert ok(api.post("/metrics/observations/bulk", owner, {"observations": rows[:1000]}))["stored"] == 1000
    assert Observation.objects.count() == 1001


def test_an_empty_bulk_is_a_validation_error(api: Api, owner: Persona) -> None:
    status, code, details = refused(api.post("/metrics/observations/bulk", owner, {"observations": []}))
    assert (status, code, list(details)) == (400, "VALIDATION_ERROR", ["observations"])


def test_bulk_finds_a_metric_by_the_same_slug_the_single_write_accepted(api: Api, owner: Persona) -> None:
    assert record(api, owner, "Body-Weight", 80.0, "2026-03-01T07:00:00Z")["metric"]["slug"] == "body_weight"
    rows = [{"slug": "Body-Weight", "value": 79.0, "occurredAt": "2026-03-02T07:00:00Z"}]
    answer = ok(api.post("/metrics/observations/bulk", owner, {"observations": rows}))
    assert (answer["stored"], answer["errors"]) == (1, [])


def test_reads_find_a_metric_by_the_same_slug_the_single_write_accepted(api: Api, owner: Persona) -> None:
    record(api, owner, "Body-Weight", 80.0, "2026-03-01T07:00:00Z")
    assert ok(api.post("/metrics/summary", owner, {"slug": "Body-Weight"}))["metric"]["slug"] == "body_weight"
    assert points(api, owner, slug="Body-Weight") == [("2026-03-01T07:00:00Z", 80.0, 1)]


# Series

AMSTERDAM_DST = [  # Europe/Amsterdam moves to summer time at 2026-03-29T01:00Z: that day has 23 hours.
    ("2026-03-28T22:30:00Z", 1.0),  # 23:30 CET on the 28th
    ("2026-03-28T23:30:00Z", 2.0),  # 00:30 CET on the 29th
    ("2026-03-29T21:30:00Z", 4.0),  # 23:30 CEST on the 29th
    ("2026-03-29T22:30:00Z", 8.0),  # 00:30 CEST on the 30th, a Monday
]


def test_raw_series_is_in_time_order_whatever_the_order_of_recording(api: Api, owner: Persona) -> None:
    for at, value in [("2026-03-03T07:00:00Z", 3.0), ("2026-03-01T07:00:00Z", 1.0), ("2026-03-02T07:00:00Z", 2.0)]:
        record(api, owner, "body_weight", value, at)
    answer = ok(api.post("/metrics/series", owner, {"slug": "body_weight"}))
    assert (answer["bucket"], answer["timeZone"], answer["aggregation"]) == ("raw", "UTC", "mean")
    assert [(p["at"], p["value"], p["count"]) for p in answer["points"]] == [
        ("2026-03-01T07:00:00Z", 1.0, 1), ("2026-03-02T07:00:00Z", 2.0, 1), ("2026-03-03T07:00:00Z", 3.0, 1),
    ]  # fmt: skip


def test_days_are_cut_in_the_time_zone_across_a_dst_change(api: Api, owner: Persona) -> None:
    for at, value in AMSTERDAM_DST:
        record(api, owner, "steps", value, at)
    assert points(api, owner, slug="steps", bucket="day", timeZone="Europe/Amsterdam") == [
        ("2026-03-28T00:00:00+01:00", 1.0, 1),
        ("2026-03-29T00:00:00+01:00", 6.0, 2),
        ("2026-03-30T00:00:00+02:00", 8.0, 1),
    ]
    assert points(api, owner, slug="steps", bucket="day", timeZone="UTC") == [
        ("2026-03-28T00:00:00Z", 3.0, 2),
        ("2026-03-29T00:00:00Z", 12.0, 2),
    ]


def test_weeks_and_months_are_cut_in_the_time_zone(api: Api, owner: Persona) -> None:
    for at, value in [*AMSTERDAM_DST, ("2026-03-31T22:30:00Z", 16.0)]:  # 00:30 CEST on 1 April
        record(api, owner, "steps", value, at)
    assert points(api, owner, slug="steps", bucket="week", timeZone="Europe/Amsterdam") == [
        ("2026-03-23T00:00:00+01:00", 7.0, 3),
        ("2026-03-30T00:00:00+02:00", 24.0, 2),
    ]
    assert points(api, owner, slug="steps", bucket="week", timeZone="UTC") == [
        ("2026-03-23T00:00:00Z", 15.0, 4),
        ("2026-03-30T00:00:00Z", 16.0, 1),
    ]
    assert points(api, owner, slug="steps", bucket="month", timeZone="Europe/Amsterdam") == [
        ("2026-03-01T00:00:00+01:00", 15.0, 4),
        ("2026-04-01T00:00:00+02:00", 16.0, 1),
    ]
    assert points(api, owner, slug="steps", bucket="month", timeZone="UTC") == [("2026-03-01T00:00:00Z", 31.0, 5)]


def test_buckets_follow_the_metrics_aggregation_hint_unless_overridden(api: Api, owner: Persona) -> None:
    day = [("2026-03-02T09:00:00Z", 2.0), ("2026-03-02T18:00:00Z", 9.0), ("2026-03-02T12:00:00Z", 4.0)]
    for at, value in day:
        record(api, owner, "steps", value, at)
        record(api, owner, "body_weight", value, at)
        record(api, owner, "readiness_score", value, at, aggregation="last")
    by_day = {"bucket": "day", "timeZone": "UTC"}
    assert points(api, owner, slug="steps", **by_day) == [("2026-03-02T00:00:00Z", 15.0, 3)]
    assert points(api, owner, slug="body_weight", **by_day) == [("2026-03-02T00:00:00Z", 5.0, 3)]
    assert points(api, owner, slug="readiness_score", **by_day) == [("2026-03-02T00:00:00Z", 9.0, 3)]  # the latest
    overridden = {how: points(api, owner, slug="steps", aggregation=how, **by_day)[0][1] for how in AGGREGATIONS}
    assert overridden == {"mean": 5.0, "sum": 15.0, "last": 9.0, "min": 2.0, "max": 9.0}
    answer = ok(api.post("/metrics/series", owner, {"slug": "steps", "aggregation": "max", **by_day}))
    assert (answer["aggregation"], answer["metric"]["aggregation"]) == ("max", "sum")


def test_since_is_inclusive_and_until_exclusive(api: Api, owner: Persona) -> None:
    for day in range(1, 6):
        record(api, owner, "body_weight", float(day), f"2026-03-0{day}T07:00:00Z")
    window = {"since": "2026-03-02T07:00:00Z", "until": "2026-03-04T07:00:00Z"}
    assert [value for _, value, _ in points(api, owner, slug="body_weight", **window)] == [2.0, 3.0]
    assert [value for _, value, _ in points(api, owner, slug="body_weight", since=window["since"])] == [
        2.0,
        3.0,
        4.0,
        5.0,
    ]
    assert [value for _, value, _ in points(api, owner, slug="body_weight", until=window["until"])] == [1.0, 2.0, 3.0]
    assert points(api, owner, slug="body_weight", bucket="day", timeZone="UTC", **window) == [
        ("2026-03-02T00:00:00Z", 2.0, 1), ("2026-03-03T00:00:00Z", 3.0, 1),
    ]  # fmt: skip


def test_a_reading_at_the_end_of_time_does_not_break_the_series(api: Api, owner: Persona) -> None:
    body = {"slug": "body_weight", "value": 80.0, "occurredAt": "9999-12-31T23:30:00Z"}
    write = api.post("/metrics/observations", owner, body)
    if write.status_code == 201:  # either the write refuses what no series can show, or the series copes
        series = api.post(
            "/metrics/series", owner, {"slug": "body_weight", "bucket": "day", "timeZone": "Europe/Amsterdam"}
        )
        assert series.status_code == 200, series.content
    else:
        assert refused(write)[:2] == (400, "VALIDATION_ERROR")


def test_a_series_by_metric_id_is_the_series_by_slug(api: Api, owner: Persona) -> None:
    metric = record(api, owner, "body_weight", 80.0, "2026-03-01T07:00:00Z")["metric"]
    assert (
        points(api, owner, metricId=metric["metricId"])
        == points(api, owner, slug="body_weight")
        == [("2026-03-01T07:00:00Z", 80.0, 1)]
    )


# Summaries

HISTORY = [  # days ago, value; the future reading counts nowhere yet
    (1, 60.0), (3, 62.0), (10, 70.0), (20, 72.0), (45, 80.0), (89, 90.0), (120, 100.0), (-2, 999.0),
]  # fmt: skip


def test_a_summary_gives_the_latest_value_and_exact_window_stats(api: Api, owner: Persona) -> None:
    for days, value in HISTORY:
        record(api, owner, "resting_heart_rate", value, ago(days))
    summary = ok(api.post("/metrics/summary", owner, {"slug": "resting_heart_rate"}))
    assert summary["latest"] == {"value": 60.0, "occurredAt": ago(1).replace("+00:00", "Z")}
    windows = summary["windows"]
    assert windows["7d"] == {"count": 2, "mean": 61.0, "min": 60.0, "max": 62.0}
    assert windows["30d"] == {"count": 4, "mean": 66.0, "min": 60.0, "max": 72.0}
    assert windows["90d"] | {"mean": None} == {"count": 6, "mean": None, "min": 60.0, "max": 90.0}
    assert windows["90d"]["mean"] == pytest.approx(434 / 6)
    assert (summary["meanBefore"], summary["trend"]) == (71.0, "down")
    assert summary["metric"]["slug"] == "resting_heart_rate"


def test_a_summary_by_metric_id_is_the_summary_by_slug(api: Api, owner: Persona) -> None:
    metric = record(api, owner, "body_weight", 80.0, ago(1))["metric"]
    by_id = ok(api.post("/metrics/summary", owner, {"metricId": metric["metricId"]}))
    assert by_id == ok(api.post("/metrics/summary", owner, {"slug": "body_weight"}))
    assert (by_id["metric"], by_id["windows"]["7d"]["count"]) == (metric, 1)


def test_a_metric_with_only_old_readings_has_empty_windows(api: Api, owner: Persona) -> None:
    record(api, owner, "body_weight", 85.0, ago(200))
    summary = ok(api.post("/metrics/summary", owner, {"slug": "body_weight"}))
    assert summary["latest"]["value"] == 85.0
    empty = {"count": 0, "mean": None, "min": None, "max": None}
    assert summary["windows"] == {"7d": empty, "30d": empty, "90d": empty}
    assert (summary["meanBefore"], summary["trend"]) == (None, "unknown")


@pytest.mark.parametrize(
    "body",
    [{}, {"metricId": "metric_01m8mfb4zqqg7hvwqwve6w6y03", "slug": "body_weight"}, {"slug": ""}],
)
def test_a_summary_needs_exactly_one_of_metric_id_and_slug(api: Api, owner: Persona, body: dict[str, Any]) -> None:
    record(api, owner, "body_weight", 80.0, ago(1))
    status, code, details = refused(api.post("/metrics/summary", owner, body))
    assert (status, code) == (400, "VALIDATION_ERROR")
    assert list(details) == ["slug" if body == {"slug": ""} else "metricId"]


@pytest.mark.parametrize("body", [{"slug": "sleep_hours"}, {"metricId": "metric_01m8mfb4zqqg7hvwqwve6w6y03"}])
def test_a_summary_of_an_unknown_metric_is_not_found(api: Api, owner: Persona, body: dict[str, Any]) -> None:
    record(api, owner, "body_weight", 80.0, ago(1))
    assert refused(api.post("/metrics/summary", owner, body)) == (404, "NOT_FOUND", body)
    assert refused(api.post("/metrics/series", owner, body)) == (404, "NOT_FOUND", body)


def test_summaries_give_every_trend_in_one_call(api: Api, owner: Persona) -> None:
    histories = {
        "rising": [(10, 70.0), (1, 75.0)],
        "falling": [(10, 70.0), (1, 65.0)],
        "steady": [(10, 100.0), (1, 101.0)],  # exactly 1 % is still flat
        "barely_rising": [(10, 100.0), (1, 101.5)],
        "only_recent": [(1, 5.0)],
        "only_earlier": [(10, 5.0)],
    }
    for slug, history in histories.items():
        for days, value in history:
            record(api, owner, slug, value, ago(days))
    answer = ok(api.post("/metrics/summaries", owner, {}))
    trends = {item["metric"]["slug"]: item["trend"] for item in answer["summaries"]}
    assert trends == {
        "barely_rising": "up", "falling": "down", "only_earlier": "unknown", "only_recent": "unknown",
        "rising": "up", "steady": "flat",
    }  # fmt: skip
    assert [item["metric"]["slug"] for item in answer["summaries"]] == sorted(histories)
    rising = next(item for item in answer["summaries"] if item["metric"]["slug"] == "rising")
    single = ok(api.post("/metrics/summary", owner, {"slug": "rising"}))
    assert rising == single


def test_summaries_can_be_limited_to_named_metrics(api: Api, owner: Persona, other: Persona) -> None:
    ids = {slug: record(api, owner, slug, 1.0, ago(1))["metric"]["metricId"] for slug in ("a", "b", "c", "d")}
    bobs = record(api, other, "e", 1.0, ago(1))["metric"]["metricId"]
    body = {"metricIds": [ids["a"], bobs], "slugs": ["c", "e", "zzz"]}
    answer = ok(api.post("/metrics/summaries", owner, body))
    assert [item["metric"]["metricId"] for item in answer["summaries"]] == [ids["a"], ids["c"]]
    only_slugs = ok(api.post("/metrics/summaries", owner, {"slugs": ["d", "b"]}))
    assert [item["metric"]["slug"] for item in only_slugs["summaries"]] == ["b", "d"]


def test_summaries_take_the_same_number_of_queries_for_two_or_twenty_metrics(alice: User) -> None:
    partition = personal(alice)

    def metrics(prefix: str, count: int) -> list[MetricDefinition]:
        made = [
            MetricDefinition.objects.create(owner=alice, partition=partition, slug=f"{prefix}_{n}", label=f"{n}")
            for n in range(count)
        ]
        Observation.objects.bulk_create(
            Observation(owner=alice, definition=definition, value=float(n + day), occurred_at=NOW - timedelta(days=day))
            for n, definition in enumerate(made)
            for day in (1, 2, 15)
        )
        return made

    two, twenty = metrics("two", 2), metrics("twenty", 20)
    with CaptureQueriesContext(connection) as for_two:
        few = summaries(two)
    with CaptureQueriesContext(connection) as for_twenty:
        many = summaries(twenty)
    assert len(for_two) == len(for_twenty) == 2
    assert len(many) == 20
    last = many[twenty[19].pk]
    assert (last["latest"]["value"], last["windows"]["7d"]["mean"]) == (20.0, 20.5)
    assert (last["meanBefore"], last["trend"]) == (34.0, "down")
    assert few[two[0].pk]["windows"]["30d"] == {"count": 3, "mean": 6.0, "min": 1.0, "max": 15.0}


# The list


def test_the_list_gives_light_stats_and_review_state(api: Api, owner: Persona) -> None:
    record(api, owner, "body_weight", 80.0, "2026-03-02T07:00:00Z", label="Body weight", unit="kg")
    record(api, owner, "body_weight", 81.0, "2026-03-03T07:00:00Z")
    record(api, owner, "body_weight", 79.0, "2026-03-01T07:00:00Z")  # recorded last, but the earliest
    flagged = record(api, owner, "weight_kg", 80.5, "2026-03-04T07:00:00Z", label="Weight", unit="kg")["metric"]
    listed = ok(api.post("/metrics/list", owner, {}))["metrics"]
    stats = [(m["slug"], m["count"], m["firstAt"], m["lastAt"], m["latestValue"]) for m in listed]
    assert stats == [
        ("body_weight", 3, "2026-03-01T07:00:00Z", "2026-03-03T07:00:00Z", 81.0),
        ("weight_kg", 1, "2026-03-04T07:00:00Z", "2026-03-04T07:00:00Z", 80.5),
    ]
    review = [(m["needsReview"], m["resembles"], m["reviewTaskId"]) for m in listed]
    assert review == [(False, None, None), (True, listed[0]["metricId"], flagged["reviewTaskId"])]
    assert (listed[0]["unit"], listed[0]["label"], listed[0]["partitionKey"]) == (
        "kg",
        "Body weight",
        "memory:personal",
    )


def test_the_list_is_empty_without_metrics(api: Api, owner: Persona) -> None:
    assert ok(api.post("/metrics/list", owner, {})) == {"metrics": []}


# The digest


def test_the_digest_lists_metric_movers_newest_first(api: Api, owner: Persona) -> None:
    for days, value in [(20, 82.0), (10, 80.0), (2, 79.0), (1, 78.0)]:
        record(api, owner, "body_weight", value, ago(days), unit="kg")
    record(api, owner, "steps", 9000.0, ago(40))
    record(api, owner, "sleep_hours", 7.0, ago(-1))  # only a future reading: nothing has moved yet
    today = NOW.date().isoformat()
    movers = ok(api.post("/digest", owner, {"date": today, "timeZone": "UTC"}))["metricMovers"]
    assert [(m["slug"], m["latestValue"], m["delta"], m["direction"]) for m in movers] == [
        ("body_weight", 78.0, -2.5, "down"),
        ("steps", 9000.0, None, "unknown"),
    ]
    assert (movers[0]["unit"], movers[0]["latestAt"]) == ("kg", ago(1).replace("+00:00", "Z"))
    assert movers[0]["window"] == "last 7 days against the 23 days before"
    limited = ok(api.post("/digest", owner, {"date": today, "timeZone": "UTC", "metricMoverLimit": 1}))
    assert [m["slug"] for m in limited["metricMovers"]] == ["body_weight"]


def test_a_rising_metric_moves_up_in_the_digest(api: Api, owner: Persona) -> None:
    for days, value in [(12, 6000.0), (3, 9000.0)]:
        record(api, owner, "steps", value, ago(days))
    movers = ok(api.post("/digest", owner, {"date": NOW.date().isoformat(), "timeZone": "UTC"}))["metricMovers"]
    assert [(m["slug"], m["latestValue"], m["delta"], m["direction"]) for m in movers] == [
        ("steps", 9000.0, 3000.0, "up")
    ]


# Who may do what


@pytest.mark.parametrize("path", list(ENDPOINTS))
def test_outsider_and_revoked_tokens_are_refused_everywhere(
    api: Api, owner: Persona, outsider: Persona, revoked: Persona, path: str
) -> None:
    record(api, owner, "body_weight", 80.0, ago(1))
    assert refused(api.post(path, outsider, ENDPOINTS[path]))[:2] == (401, "TOKEN_INVALID")
    assert refused(api.post(path, revoked, ENDPOINTS[path]))[:2] == (401, "TOKEN_REVOKED")
    assert refused(api.post(path, None, ENDPOINTS[path]))[:2] == (401, "AUTH_REQUIRED")
    assert Observation.objects.count() == 1


def test_another_user_sees_none_of_the_owners_metrics(api: Api, owner: Persona, other: Persona) -> None:
    metric = record(api, owner, "body_weight", 80.0, ago(1), unit="kg")["metric"]
    for path in ("/metrics/summary", "/metrics/series"):
        for body in ({"slug": "body_weight"}, {"metricId": metric["metricId"]}):
            assert refused(api.post(path, other, body)) == (404, "NOT_FOUND", body)
    assert ok(api.post("/metrics/list", other, {})) == {"metrics": []}
    assert ok(api.post("/metrics/summaries", other, {})) == {"summaries": []}
    assert ok(api.post("/metrics/summaries", other, {"metricIds": [metric["metricId"]]})) == {"summaries": []}
    movers = ok(api.post("/digest", other, {"date": NOW.date().isoformat(), "timeZone": "UTC"}))["metricMovers"]
    assert movers == []
    bulk = ok(api.post("/metrics/observations/bulk", other, ENDPOINTS["/metrics/observations/bulk"]))
    assert (bulk["stored"], [e["error"]["code"] for e in bulk["errors"]]) == (0, ["NOT_FOUND"])
    # Bob's own body_weight is a new metric of his; Alice's keeps its one observation.
    bobs = record(api, other, "body_weight", 95.0, ago(1))
    assert bobs["metricCreated"] is True
    assert bobs["metric"]["metricId"] != metric["metricId"]
    assert Observation.objects.filter(definition_id=metric["metricId"]).count() == 1


def test_a_read_only_token_reads_but_cannot_record(api: Api, owner: Persona, alice: User) -> None:
    record(api, owner, "body_weight", 80.0, ago(1))
    reader = issue(alice, "reader", scopes=[Scope.READ])
    for path in WRITES:
        assert refused(api.post(path, reader, ENDPOINTS[path])) == (403, "SCOPE_REQUIRED", {"requiredScope": "write"})
    assert Observation.objects.count() == 1
    assert [m["slug"] for m in ok(api.post("/metrics/list", reader, {}))["metrics"]] == ["body_weight"]
    assert ok(api.post("/metrics/summary", reader, {"slug": "body_weight"}))["latest"]["value"] == 80.0


def test_a_token_without_read_scope_cannot_read(api: Api, owner: Persona, alice: User) -> None:
    record(api, owner, "body_weight", 80.0, ago(1))
    writer = issue(alice, "writer", scopes=[Scope.WRITE])
    for path in ("/metrics/list", "/metrics/series", "/metrics/summary", "/metrics/summaries"):
        assert refused(api.post(path, writer, ENDPOINTS[path])) == (403, "SCOPE_REQUIRED", {"requiredScope": "read"})


def test_a_token_limited_to_another_partition_sees_none_of_the_personal_metrics(
    api: Api, owner: Persona, alice: User
) -> None:
    metric = record(api, owner, "body_weight", 80.0, ago(1), label="Body weight", unit="kg")["metric"]
    PartitionFactory.create(owner=alice, key="project:apollo")
    limited = issue(
        alice, "limited", scopes=Scope.values, partition_keys=["project:apollo"], default_partition_key="project:apollo"
    )
    assert ok(api.post("/metrics/list", limited, {})) == {"metrics": []}
    assert ok(api.post("/metrics/summaries", limited, {"metricIds": [metric["metricId"]]})) == {"summaries": []}
    for path in ("/metrics/summary", "/metrics/series"):
        for body in ({"slug": "body_weight"}, {"metricId": metric["metricId"]}):
            assert refused(api.post(path, limited, body)) == (404, "NOT_FOUND", body)
    personal_key = {"partitionKey": "memory:personal"}
    assert refused(api.post("/metrics/list", limited, personal_key)) == (404, "NOT_FOUND", personal_key)
    bulk = ok(api.post("/metrics/observations/bulk", limited, ENDPOINTS["/metrics/observations/bulk"]))
    assert (bulk["stored"], len(bulk["errors"])) == (0, 1)
    # Its own body_weight lives in its partition, apart from (and not a duplicate of) the personal one.
    own = record(api, limited, "body_weight", 70.0, ago(1))["metric"]
    assert (own["partitionKey"], own["needsReview"]) == ("project:apollo", False)
    assert own["metricId"] != metric["metricId"]
    assert [m["metricId"] for m in ok(api.post("/metrics/list", limited, {}))["metrics"]] == [own["metricId"]]
    assert [m["metricId"] for m in ok(api.post("/metrics/list", owner, {}))["metrics"]] == [metric["metricId"]]


def test_a_chat_host_reads_and_records_for_the_user_it_names(
    api: Api, owner: Persona, host: Persona, alice: User
) -> None:
    metric = record(api, owner, "body_weight", 80.0, ago(2))["metric"]
    as_alice = {"userId": alice.external_id}
    written = ok(api.post("/metrics/observations", host, {"slug": "body_weight", "value": 79.0, **as_alice}), 201)
    assert (written["metricCreated"], written["metric"]["metricId"]) == (False, metric["metricId"])
    listed = ok(api.post("/metrics/list", host, as_alice))["metrics"]
    assert [(m["slug"], m["count"], m["latestValue"]) for m in listed] == [("body_weight", 2, 79.0)]
    missing = {"userId": ["This field is required."]}
    assert refused(api.post("/metrics/list", host, {})) == (400, "VALIDATION_ERROR", missing)
    assert refused(api.post("/metrics/list", host, {"userId": "bob"}))[:2] == (404, "NOT_FOUND")


# Malformed input


@pytest.mark.parametrize("path", list(ENDPOINTS))
def test_an_unknown_field_is_a_validation_error_naming_it(api: Api, owner: Persona, path: str) -> None:
    status, code, details = refused(api.post(path, owner, {**ENDPOINTS[path], "colour": "blue"}))
    assert (status, code, details) == (400, "VALIDATION_ERROR", {"colour": ["Unknown field."]})
    assert not Observation.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"timeZone": "Mars/Olympus_Mons"}, "timeZone"),
        ({"timeZone": "../../etc/passwd"}, "timeZone"),
        ({"bucket": "year"}, "bucket"),
        ({"aggregation": "median"}, "aggregation"),
        ({"since": "last tuesday"}, "since"),
        ({"slug": "body weight"}, "slug"),
    ],
)
def test_a_malformed_series_request_is_a_validation_error_naming_the_field(
    api: Api, owner: Persona, body: dict[str, Any], field: str
) -> None:
    record(api, owner, "body_weight", 80.0, ago(1))
    status, code, details = refused(api.post("/metrics/series", owner, {"slug": "body_weight", **body}))
    assert (status, code, list(details)) == (400, "VALIDATION_ERROR", [field])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slug": "body_weight", "value": "heavy"}, "value"),
        ({"slug": "body_weight"}, "value"),
        ({"value": 1.0}, "slug"),
        ({"slug": "body_weight", "value": 1.0, "aggregation": "median"}, "aggregation"),
        ({"slug": "body_weight", "value": 1.0, "occurredAt": "soon"}, "occurredAt"),
        ({"slug": "body_weight", "value": 1.0, "unit": "k" * 21}, "unit"),
    ],
)
def test_a_malformed_observation_is_a_validation_error_naming_the_field(
    api: Api, owner: Persona, body: dict[str, Any], field: str
) -> None:
    status, code, details = refused(api.post("/metrics/observations", owner, body))
    assert (status, code, list(details)) == (400, "VALIDATION_ERROR", [field])
    assert not MetricDefinition.objects.exists()


def test_an_infinite_value_is_a_validation_error(api: Api, owner: Persona) -> None:
    response = api.post("/metrics/observations", owner, raw='{"slug": "body_weight", "value": 1e999}')
    assert refused(response) == (400, "VALIDATION_ERROR", {"value": ["A valid number is required."]})
    assert not MetricDefinition.objects.exists()


def test_malformed_json_is_refused_in_the_error_shape(api: Api, owner: Persona) -> None:
    response = api.post("/metrics/observations", owner, raw='{"slug": "body_weight", "value": ')
    assert (response.status_code, error_code(response)) == (400, "MALFORMED_JSON")

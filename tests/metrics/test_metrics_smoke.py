"""A week of weight readings in bulk gives the right 7-day summary and a bucketed series; a reading said in a
conversation becomes an observation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.pipeline.runner import run_operation
from metrics.models import Observation
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db


def test_a_week_of_weights_in_bulk_gives_the_summary_and_series(api: Api, owner: Persona) -> None:
    # The newest reading a few minutes ago, not at a fixed hour: a reading later today would still be in the
    # future before that hour, and future readings do not count.
    today = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=5)
    three_weeks_ago = (today - timedelta(days=20)).isoformat()
    earlier = {"slug": "body_weight", "value": 80.0, "unit": "kg", "occurredAt": three_weeks_ago}
    first = api.post("/metrics/observations", owner, earlier)
    assert first.status_code == 201, first.json()
    days = [(today - timedelta(days=6 - day)).isoformat() for day in range(7)]
    week = [{"slug": "body_weight", "value": 78.0 + day / 10, "occurredAt": at} for day, at in enumerate(days)]
    answer = api.post("/metrics/observations/bulk", owner, {"observations": [*week, {"slug": "nope", "value": 1,
                      "occurredAt": today.isoformat()}]}).json()  # fmt: skip
    assert (answer["stored"], [e["slug"] for e in answer["errors"]]) == (7, ["nope"])
    summary = api.post("/metrics/summary", owner, {"slug": "body_weight"}).json()
    seven = summary["windows"]["7d"]
    assert (seven["count"], round(seven["mean"], 3), seven["min"], seven["max"]) == (7, 78.3, 78.0, 78.6)
    assert summary["latest"]["value"] == 78.6
    assert summary["trend"] == "down"
    series = api.post("/metrics/series", owner, {"slug": "body_weight", "bucket": "day", "timeZone": "UTC"}).json()
    assert [round(p["value"], 1) for p in series["points"]] == [80.0, 78.0, 78.1, 78.2, 78.3, 78.4, 78.5, 78.6]


def test_a_reading_in_a_conversation_becomes_an_observation(api: Api, owner: Persona) -> None:
    body = {"conversation": {"id": "c", "messages": [
        {"id": "m1", "role": "user", "content": "I weighed 78.2 kg this morning.", "timestamp": "2026-04-22T07:00:00Z"},
    ]}}  # fmt: skip
    run_operation(api.post("/ingest/conversation", owner, body).json()["operationId"])
    observation = Observation.objects.select_related("definition", "event", "source", "claim").get()
    assert (observation.definition.slug, observation.value, observation.definition.unit) == ("body_weight", 78.2, "kg")
    assert observation.source is not None and observation.source.message_id == "m1"
    assert observation.event is not None and observation.event.type == "Event"
    assert observation.claim is not None and observation.claim.kind == "reading"

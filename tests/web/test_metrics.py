"""/ui/metrics/: every metric with its latest value and trend; one metric's chart (raw or day / week / month
buckets, a range or from-to dates, in the person's time zone), its readings with the message each came from,
adding a reading and deleting a wrong one."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from memory.models import Partition
from memory.pipeline.runner import run_operation
from metrics.models import Observation
from tests.conftest import Api, Persona
from tests.factories import PartitionFactory
from tests.web.conftest import post_without_csrf, screenshots, sign_in_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
# Weights said in conversations, days ago; the newest is the lightest.
SAID = {75: 84.6, 50: 84.2, 25: 84.0, 12: 83.5, 5: 82.4, 2: 82.1}
# Weights recorded over REST, how long ago: two on one day, so days and weeks hold fewer points than readings.
RECORDED = {timedelta(days=200): 86.0, timedelta(days=1, hours=2): 82.3, timedelta(days=1): 82.0}


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def weigh_in(api: Api, persona: Persona) -> None:
    """Each weight said in its own message on its own morning, ingested and processed; two more over REST."""
    messages = [
        {
            "id": f"w{days}",
            "role": "user",
            "content": f"I weighed {value} kg this morning.",
            "timestamp": (NOW - timedelta(days=days)).replace(hour=7).isoformat(),
        }
        for days, value in SAID.items()
    ]
    receipt = api.post("/ingest/conversation", persona, {"conversation": {"id": "scale", "messages": messages}})
    assert receipt.status_code in (200, 201, 202), receipt.content
    run_operation(receipt.json()["operationId"])
    for ago, value in RECORDED.items():
        at = (NOW - ago).isoformat()
        answer = api.post("/metrics/observations", persona, {"slug": "body_weight", "value": value, "occurredAt": at})
        assert answer.status_code == 201, answer.content


def drawn(page) -> int:
    """The points uPlot drew (the script sets the count after drawing), checked against the embedded data."""
    page.wait_for_selector("#chart[data-drawn]", state="attached")
    count = int(page.get_attribute("#chart", "data-drawn"))
    assert count == len(json.loads(page.inner_text("#chart-data"))["points"])
    if count:
        assert page.locator("#chart canvas").count() == 1
    return count


def show(page, **choices: str) -> int:
    """Change the chart settings through the form, as a person does, and count what is drawn."""
    for label, value in choices.items():
        field = page.get_by_label(label, exact=True)
        if label in ("From", "To"):
            field.fill(value)
        else:
            field.select_option(value)
    page.get_by_role("button", name="Show").click()
    page.wait_for_load_state("load")
    return drawn(page)


def days_ago(*windows: int) -> list[int]:
    every = [*SAID, *(ago.days for ago in RECORDED)]
    return [sum(1 for days in every if days < window) for window in windows]


def test_the_owner_reads_the_weight_trend_from_conversations(page, live_server, api: Api, owner: Persona) -> None:
    weigh_in(api, owner)
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/metrics/")
    row = page.locator("#metrics tr[data-metric=body_weight]")
    assert "Body weight" in row.inner_text()
    assert row.locator(".latest").inner_text() == "82 kg"  # the newest reading, recorded over REST
    assert row.locator(".trend").get_attribute("data-trend") == "down"
    recent = {
        at.date() for at in Observation.objects.values_list("occurred_at", flat=True) if at > NOW - timedelta(days=89)
    }
    assert row.locator("svg.sparkline").get_attribute("data-days") == str(len(recent))
    assert row.locator("svg.sparkline polyline").get_attribute("points").count(",") == len(recent)
    screenshots(page, "ui-metrics-list")

    page.get_by_role("link", name="Body weight").click()
    page.wait_for_url("**/ui/metrics/body_weight/")
    ninety = days_ago(90)[0]
    assert drawn(page) == ninety  # the last 90 days by default
    assert page.locator("#readings tbody tr").count() == ninety
    caption = page.inner_text("#chart-summary")
    assert caption.startswith(f"{ninety} points from ") and "latest 82 kg" in caption
    said = Observation.objects.select_related("source").get(value=82.4)
    assert said.source is not None and said.source.parent_id  # a message of the conversation
    conversation = said.source.parent_id
    link = page.locator(f"#readings tr[data-reading={said.pk}] a.from-message")
    assert link.get_attribute("href") == f"/ui/sources/{conversation}/#message-w5"
    assert "Body weight: 82.4 kg" in page.inner_text(f"#readings tr[data-reading={said.pk}] .note")
    screenshots(page, "ui-metrics-detail")
    link.click()
    page.wait_for_url(f"**/ui/sources/{conversation}/#message-w5")
    assert "I weighed 82.4 kg this morning." in page.inner_text("#message-w5")


def test_buckets_ranges_and_dates_change_the_points_drawn(page, live_server, api: Api, owner: Persona) -> None:
    weigh_in(api, owner)
    times = list(Observation.objects.values_list("occurred_at", flat=True))
    weeks = {(at - timedelta(days=at.weekday())).date() for at in times}
    months = {(at.year, at.month) for at in times}
    thirty, ninety, year = days_ago(30, 90, 365)
    # Every change below must show in the count.
    assert len(months) < len(weeks) < len(times) and thirty < ninety < year
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/metrics/body_weight/")
    assert show(page, Range="30") == thirty
    assert show(page, Range="365") == year
    assert show(page, Range="all") == len(times) == year
    assert show(page, Show="week") == len(weeks)
    screenshots(page, "ui-metrics-detail-weeks")
    assert show(page, Show="month") == len(months)
    assert "per month" in page.inner_text("#chart-summary")
    start, end = (NOW - timedelta(days=13)).date(), (NOW - timedelta(days=4)).date()
    # Typing dates switches the range to "Between dates" by itself.
    assert show(page, Show="raw", From=start.isoformat(), To=end.isoformat()) == 2  # days 12 and 5
    assert page.get_by_label("Range").input_value() == "dates"
    assert page.locator("#readings tbody tr").count() == 2
    assert show(page, From=end.isoformat(), To=start.isoformat()) == len(times)  # reversed: said, and all shown
    assert "start date is after the end date" in page.inner_text(".messages")


def test_the_time_zone_decides_the_day_and_is_remembered(api: Api, owner: Persona) -> None:
    late, early = datetime(2026, 11, 20, 23, 30, tzinfo=UTC), datetime(2026, 11, 21, 1, 0, tzinfo=UTC)
    for at, value in ((late, 3000), (early, 500)):
        answer = api.post(
            "/metrics/observations", owner, {"slug": "steps", "value": value, "occurredAt": at.isoformat()}
        )
        assert answer.status_code == 201, answer.content
    client = signed_in(owner.user)
    utc = client.get("/ui/metrics/steps/?bucket=day&range=all").context["chart"]
    assert (utc["timeZone"], [point[1] for point in utc["points"]]) == ("UTC", [3000, 500])
    tokyo = client.get("/ui/metrics/steps/?bucket=day&range=all&tz=Asia/Tokyo").context["chart"]
    midnight = datetime(2026, 11, 21, tzinfo=ZoneInfo("Asia/Tokyo"))
    assert tokyo["points"] == [[int(midnight.timestamp()), 3500, 2]]  # both on the 21st there, summed
    remembered = client.get("/ui/metrics/steps/?bucket=day&range=all")
    assert remembered.context["chart"]["timeZone"] == "Asia/Tokyo" and len(remembered.context["chart"]["points"]) == 1
    assert "times in Asia/Tokyo" in client.get("/ui/metrics/").content.decode()
    assert client.get("/ui/metrics/steps/?tz=Mars/Olympus").context["zone"] == "Asia/Tokyo"  # unknown: ignored


def test_add_a_reading_then_delete_a_wrong_one(page, live_server, api: Api, owner: Persona) -> None:
    weigh_in(api, owner)
    ninety = days_ago(90)[0]
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/metrics/body_weight/?range=90")
    when = (NOW - timedelta(days=3)).replace(hour=8, minute=15)
    page.get_by_label("Value (kg)").fill("81.7")
    page.get_by_label("When (UTC)").fill(when.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("Note").fill("after the long run")
    page.get_by_role("button", name="Add reading").click()
    page.wait_for_load_state("load")
    assert page.url.endswith("/ui/metrics/body_weight/?range=90")  # the chart settings are kept
    added = Observation.objects.get(value=81.7)
    assert (added.occurred_at, added.note, added.source_id, added.definition.slug) == (
        when,
        "after the long run",
        None,
        "body_weight",
    )
    assert "Added 81.7 kg." in page.inner_text(".messages")
    assert drawn(page) == ninety + 1
    assert "recorded directly" in page.inner_text(f"#readings tr[data-reading={added.pk}]")

    wrong = Observation.objects.select_related("claim").get(value=83.5)
    assert wrong.claim is not None
    page.get_by_role("link", name=f"Delete the reading 83.5 kg of {wrong.occurred_at:%-d %b %Y, %H:%M}").click()
    page.wait_for_url(f"**/ui/metrics/body_weight/readings/{wrong.pk}/delete?range=90")
    assert "83.5 kg" in page.inner_text("#doomed")
    assert Observation.objects.filter(pk=wrong.pk).exists()  # asking removed nothing
    screenshots(page, "ui-metrics-delete")
    page.get_by_role("button", name="Delete the reading").click()
    page.wait_for_load_state("load")
    assert page.url.endswith("/ui/metrics/body_weight/?range=90")
    assert not Observation.objects.filter(pk=wrong.pk).exists()
    assert not type(wrong.claim).objects.filter(pk=wrong.claim.pk).exists()  # its reading claim went too
    assert "Deleted the reading." in page.inner_text(".messages")
    assert drawn(page) == ninety
    assert page.locator(f"#readings tr[data-reading={wrong.pk}]").count() == 0


def test_a_reading_that_is_not_a_number_or_out_of_the_calendar_is_refused(api: Api, owner: Persona) -> None:
    weigh_in(api, owner)
    client = signed_in(owner.user)
    before = Observation.objects.count()
    for value, when in (("", "2026-11-20T08:00"), ("eighty", "2026-11-20T08:00"), ("81", "yesterday"),
                        ("81", "3100-01-01T08:00"), ("1e300", "2026-11-20T08:00")):  # fmt: skip
        response = client.post("/ui/metrics/body_weight/readings", {"value": value, "occurred_at": when}, follow=True)
        assert response.status_code == 200
        shown = [str(message) for message in response.context["messages"]]
        assert len(shown) == 1 and not shown[0].startswith("Added"), (value, when, shown)
    assert Observation.objects.count() == before


def test_another_person_gets_404_on_every_metric_url(api: Api, owner: Persona, other: Persona) -> None:
    weigh_in(api, owner)
    theirs = Observation.objects.get(value=82.4)
    bob = signed_in(other.user)
    assert bob.get("/ui/metrics/body_weight/").status_code == 404
    assert bob.get(f"/ui/metrics/body_weight/readings/{theirs.pk}/delete").status_code == 404
    assert bob.post(f"/ui/metrics/body_weight/readings/{theirs.pk}/delete").status_code == 404
    assert (
        bob.post("/ui/metrics/body_weight/readings", {"value": "1", "occurred_at": "2026-11-20T08:00"}).status_code
        == 404
    )
    # With a body_weight of his own, her reading is still not his to see or delete.
    assert api.post("/metrics/observations", other, {"slug": "body_weight", "value": 70.0}).status_code == 201
    assert bob.get(f"/ui/metrics/body_weight/readings/{theirs.pk}/delete").status_code == 404
    assert bob.post(f"/ui/metrics/body_weight/readings/{theirs.pk}/delete").status_code == 404
    assert "82.4" not in bob.get("/ui/metrics/body_weight/?range=all").content.decode()
    assert Observation.objects.filter(pk=theirs.pk).exists()
    assert Observation.objects.filter(definition__owner=owner.user).count() == len(SAID) + len(RECORDED)
    # One of her readings under another of her metrics is not found either.
    assert api.post("/metrics/observations", owner, {"slug": "steps", "value": 9000}).status_code == 201
    assert signed_in(owner.user).get(f"/ui/metrics/steps/readings/{theirs.pk}/delete").status_code == 404


def test_a_signed_out_visitor_is_sent_to_sign_in(api: Api, owner: Persona) -> None:
    weigh_in(api, owner)
    reading = Observation.objects.first()
    assert reading is not None
    for path in ("/ui/metrics/", "/ui/metrics/body_weight/", f"/ui/metrics/body_weight/readings/{reading.pk}/delete"):
        response = Client().get(path)
        assert (response.status_code, response["Location"].split("?")[0]) == (302, "/accounts/login/"), path
    response = Client().post("/ui/metrics/body_weight/readings", {"value": "1", "occurred_at": "2026-11-20T08:00"})
    assert (response.status_code, response["Location"].split("?")[0]) == (302, "/accounts/login/")


def test_every_form_refuses_a_post_without_csrf(api: Api, owner: Persona) -> None:
    weigh_in(api, owner)
    reading = Observation.objects.first()
    assert reading is not None
    before = Observation.objects.count()
    add = {"value": "80", "occurred_at": "2026-11-20T08:00"}
    assert post_without_csrf(owner.user, "/ui/metrics/body_weight/readings", add) == 403
    assert post_without_csrf(owner.user, f"/ui/metrics/body_weight/readings/{reading.pk}/delete") == 403
    assert Observation.objects.count() == before


def test_the_list_costs_the_same_queries_for_one_metric_or_many(api: Api, owner: Persona) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = signed_in(owner.user)
    assert api.post("/metrics/observations", owner, {"slug": "body_weight", "value": 80}).status_code == 201
    with CaptureQueriesContext(connection) as one:
        assert client.get("/ui/metrics/").status_code == 200
    for slug in ("steps", "resting_heart_rate", "sleep_hours"):
        assert api.post("/metrics/observations", owner, {"slug": slug, "value": 7}).status_code == 201
    with CaptureQueriesContext(connection) as four:
        page = client.get("/ui/metrics/").content.decode()
    assert page.count("data-metric=") == 4
    assert len(four.captured_queries) == len(one.captured_queries)


def test_an_empty_list_says_how_metrics_arrive(page, live_server, owner: Persona) -> None:
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/metrics/")
    assert "No metrics yet" in page.inner_text("main")
    screenshots(page, "ui-metrics-empty")


def test_in_the_workspace_view_a_reading_joins_the_metric_of_its_partition(api: Api, owner: Persona) -> None:
    PartitionFactory.create(owner=owner.user, key="project:fit", label="Fitness")
    body = {"slug": "resting_heart_rate", "value": 58, "unit": "bpm", "partitionKey": "project:fit"}
    assert api.post("/metrics/observations", owner, body).status_code == 201
    client = signed_in(owner.user)
    assert client.get("/ui/metrics/resting_heart_rate/").status_code == 404  # not in the personal partition
    client.post("/ui/partition", {"partition": "*"})
    listed = client.get("/ui/metrics/").content.decode()
    assert 'data-metric="resting_heart_rate"' in listed and "Fitness" in listed  # the partition column shows
    client.post("/ui/metrics/resting_heart_rate/readings", {"value": "56", "occurred_at": "2026-11-20T08:00"})
    fit = Partition.objects.get(owner=owner.user, key="project:fit")
    assert sorted(Observation.objects.filter(definition__partition=fit).values_list("value", flat=True)) == [56, 58]
    assert not Observation.objects.exclude(definition__partition=fit).exists()

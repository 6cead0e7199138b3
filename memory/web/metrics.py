"""/ui/metrics/: every metric with its latest value and trend (metrics.selectors.metrics_overview, the code of
/metrics/summaries), and one metric's page (metrics.selectors.metric_page): its series as a chart (the code of
/metrics/series: raw or day / week / month buckets, a range, in the person's time zone), its readings with
the message each came from, adding a reading (metrics.services.metric_observe → observation_record, as
/metrics/observations) and deleting a wrong one (metrics.erasure.observations_erase)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, available_timezones

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_POST

from memory.web.access import web_access
from memory.web.actions import found, perform
from memory.web.zone import choose_zone, person_zone
from metrics.erasure import observations_erase
from metrics.selectors import definition_for_access, metric_page, metrics_overview, reading_for_access
from metrics.services import metric_observe

BUCKETS = {"raw": "Every reading", "day": "Per day", "week": "Per week", "month": "Per month"}
RANGES = {"30": "Last 30 days", "90": "Last 90 days", "365": "Last year", "all": "All time", "dates": "Between dates"}
DEFAULT_RANGE = "90"
CHART_SETTINGS = ("bucket", "range", "from", "to", "tz")


@login_required
def metric_list(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    zone = _zone(request)
    overview = found(lambda: metrics_overview(access, zone_name=zone))
    return render(request, "ui/metrics/list.html", {"metrics": overview, "zone": zone})


@dataclass(frozen=True)
class Window:
    """The part of the series a person asked for: a named range, or from-to dates in their time zone."""

    choice: str
    since: datetime | None
    until: datetime | None
    start: date | None  # the dates as typed, to fill the form again
    end: date | None


def _zone(request: HttpRequest) -> str:
    """The time zone asked for on this page (then remembered for every page), else the person's."""
    asked = choose_zone(request, request.GET.get("tz", ""))
    return (asked or person_zone(request)).key


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _window(request: HttpRequest, zone: ZoneInfo) -> Window:
    choice = request.GET.get("range", DEFAULT_RANGE)
    if choice not in RANGES:
        choice = DEFAULT_RANGE
    start, end = _day(request.GET.get("from", "")), _day(request.GET.get("to", ""))
    if choice == "dates":
        if start and end and start > end:
            messages.error(request, "The start date is after the end date: showing all time instead.")
            return Window("all", None, None, start, end)
        # Whole days in the person's zone: from the start of `from` to the end of `to`.
        since = datetime.combine(start, time.min, tzinfo=zone) if start else None
        until = datetime.combine(end + timedelta(days=1), time.min, tzinfo=zone) if end else None
        return Window("dates", since, until, start, end)
    if choice == "all":
        return Window("all", None, None, None, None)
    return Window(choice, timezone.now() - timedelta(days=int(choice)), None, None, None)


@login_required
def metric_detail(request: HttpRequest, slug: str) -> HttpResponse:
    access = web_access(request)
    zone_name = _zone(request)
    zone = ZoneInfo(zone_name)
    bucket = request.GET.get("bucket", "raw")
    bucket = bucket if bucket in BUCKETS else "raw"
    window = _window(request, zone)
    shown = found(
        lambda: metric_page(
            access, slug=slug, bucket=None if bucket == "raw" else bucket, zone_name=zone_name, since=window.since,
            until=window.until,
        )
    )  # fmt: skip
    chart = {
        "label": shown.definition.label,
        "unit": shown.definition.unit,
        "bucket": bucket,
        "timeZone": zone_name,
        "points": [[int(point.at.timestamp()), point.value, point.count] for point in shown.points],
    }
    context = {
        "metric": shown.definition,
        "summary": shown.summary,
        "points": shown.points,
        "chart": chart,
        "readings": shown.readings,
        "bucket": bucket,
        "bucket_label": BUCKETS[bucket],
        "buckets": BUCKETS,
        "window": window,
        "ranges": RANGES,
        "zone": zone_name,
        "zones": sorted(available_timezones()),
        "now_local": timezone.now().astimezone(zone).strftime("%Y-%m-%dT%H:%M"),
        "query": request.GET.urlencode(),
    }
    return render(request, "ui/metrics/detail.html", context)


def _detail_url(definition_slug: str, query: str) -> str:
    return f"/ui/metrics/{definition_slug}/" + (f"?{query}" if query else "")


def _back_to(request: HttpRequest, slug: str) -> HttpResponseRedirect:
    """Back to the metric's page with the chart settings the form was sent from (only those, nothing else)."""
    asked = QueryDict(request.POST.get("query", ""))
    kept = QueryDict(mutable=True)
    for name in CHART_SETTINGS:
        if asked.get(name):
            kept[name] = asked[name]
    return HttpResponseRedirect(_detail_url(slug, kept.urlencode()))


@login_required
@require_POST
def reading_add(request: HttpRequest, slug: str) -> HttpResponse:
    access = web_access(request)
    zone = ZoneInfo(_zone(request))
    try:
        value = float(request.POST.get("value", "").replace(",", "."))
        when = datetime.fromisoformat(request.POST.get("occurred_at", "")).replace(tzinfo=zone)
    except ValueError:
        found(lambda: definition_for_access(access, slug=slug))  # out of reach stays a 404, whatever was sent
        messages.error(request, "Give the reading as a number and its date and time (e.g. 82.4 and today, 07:30).")
        return _back_to(request, slug)
    note = request.POST.get("note", "").strip()
    added = perform(request, lambda: metric_observe(access, slug=slug, value=value, occurred_at=when, note=note))
    if added is not None:
        messages.success(request, f"Added {added.value:g} {added.definition.unit}".rstrip() + ".")
    return _back_to(request, slug)


@login_required
def reading_delete(request: HttpRequest, slug: str, observation_id: str) -> HttpResponse:
    """GET shows the reading and asks; POST erases it with its reading claim (the message itself stays)."""
    access = web_access(request)
    reading = found(lambda: reading_for_access(access, slug=slug, observation_id=observation_id))
    if request.method == "POST":
        erased = perform(
            request,
            lambda: observations_erase(access=access, observation_ids=[reading.pk], dry_run=False),
            done="Deleted the reading.",
        )
        if erased is None:
            return HttpResponseRedirect(f"/ui/metrics/{reading.definition.slug}/readings/{reading.pk}/delete")
        return _back_to(request, reading.definition.slug)
    context = {
        "metric": reading.definition,
        "reading": reading,
        "zone": _zone(request),
        "query": request.GET.urlencode(),
    }
    return render(request, "ui/metrics/delete.html", context)

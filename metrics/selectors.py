"""Reading metrics: definitions with light stats, series (raw or bucketed in a time zone), and summaries of
one or many metrics in a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Avg, Count, Max, Min, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce, Trunc
from django.utils import timezone

from memory.access import Access
from memory.errors import NotFound, ValidationFailed
from memory.models import Scope
from metrics.models import Aggregation, MetricDefinition, Observation
from metrics.services import normalize_slug

WINDOWS = (7, 30, 90)
TREND_TOLERANCE = 0.01  # a change under 1 % of the earlier mean is flat
MAX_POINTS = 5000


def definitions_in_reach(access: Access) -> QuerySet[MetricDefinition]:
    access.require_scope(Scope.READ)
    definitions = MetricDefinition.objects.filter(owner=access.user, partition__in=access.read_partitions)
    return definitions.select_related("partition").defer("embedding")


def definition_for_access(access: Access, *, metric_id: str | None = None, slug: str | None = None) -> MetricDefinition:
    definitions = definitions_in_reach(access)
    if metric_id:
        found = definitions.filter(pk=metric_id).first()
    else:
        found = definitions.filter(slug=normalize_slug(slug or "")).order_by("id").first()
    if found is None:
        raise NotFound("No such metric.", details={"metricId": metric_id} if metric_id else {"slug": slug})
    return found


def definitions_with_stats(access: Access, *, needs_review: bool | None = None) -> list[MetricDefinition]:
    """Every metric (or those whose `needs_review` is as given) with `count`, `first_at`, `last_at` and
    `latest_value` (the newest not in the future) annotated, in one query. Each is read from `observation_series`
    per metric: the first and last readings are its ends, the count an index-only scan, no reading's row."""
    readings = Observation.objects.filter(definition=OuterRef("pk")).order_by()
    definitions = definitions_in_reach(access)
    if needs_review is not None:
        definitions = definitions.filter(needs_review=needs_review)
    return list(
        definitions.annotate(
            count=Coalesce(Subquery(readings.values("definition").annotate(n=Count("*")).values("n")), 0),
            first_at=Subquery(readings.order_by("occurred_at").values("occurred_at")[:1]),
            last_at=Subquery(readings.order_by("-occurred_at").values("occurred_at")[:1]),
            latest_value=Subquery(_newest(readings, timezone.now()).values("value")[:1]),
        ).order_by("slug", "id")
    )


def _newest(readings: QuerySet[Observation], now: datetime) -> QuerySet[Observation]:
    """The readings newest first, none in the future: the first is a metric's latest value."""
    return readings.filter(occurred_at__lte=now).order_by("-occurred_at", "-id")


@dataclass(frozen=True)
class Point:
    at: datetime
    value: float
    count: int = 1


def series(
    definition: MetricDefinition,
    *,
    bucket: str | None,
    zone_name: str,
    since: datetime | None = None,
    until: datetime | None = None,
    aggregation: str | None = None,
) -> list[Point]:
    """Raw observations, or one value per day / week / month in the time zone, aggregated by the metric's
    hint (or `aggregation`)."""
    observations = Observation.objects.filter(definition=definition)
    if since:
        observations = observations.filter(occurred_at__gte=since)
    if until:
        observations = observations.filter(occurred_at__lt=until)
    if bucket is None:
        raw = observations.order_by("occurred_at", "id").values_list("occurred_at", "value")[:MAX_POINTS]
        return [Point(at, value) for at, value in raw]
    how = aggregation or definition.aggregation
    value: Any = {
        Aggregation.MEAN: Avg("value"), Aggregation.SUM: Sum("value"), Aggregation.MIN: Min("value"),
        Aggregation.MAX: Max("value"), Aggregation.LAST: ArrayAgg("value", order_by=("-occurred_at", "-id")),
    }[Aggregation(how)]  # fmt: skip
    if bucket not in ("day", "week", "month"):
        raise ValidationFailed("Unknown bucket.", details={"bucket": ["day, week or month."]})
    zone = ZoneInfo(zone_name)
    rows = (
        observations.annotate(start=Trunc("occurred_at", bucket, tzinfo=zone))
        .values("start")
        .annotate(value=value, count=Count("id"))
        .order_by("start")[:MAX_POINTS]
    )
    points = []
    for row in rows:
        bucketed: Any = row["value"]
        count: Any = row["count"]
        points.append(Point(row["start"], float(bucketed[0] if how == Aggregation.LAST else bucketed), count))
    return points


def _window_aggregates(now: datetime) -> dict[str, Any]:
    aggregates: dict[str, Any] = {}
    for days in WINDOWS:
        inside = Q(occurred_at__gte=now - timedelta(days=days), occurred_at__lte=now)
        aggregates |= {
            f"count_{days}": Count("id", filter=inside),
            f"mean_{days}": Avg("value", filter=inside),
            f"min_{days}": Min("value", filter=inside),
            f"max_{days}": Max("value", filter=inside),
        }
    earlier = Q(occurred_at__gte=now - timedelta(days=30), occurred_at__lt=now - timedelta(days=7))
    aggregates["mean_before"] = Avg("value", filter=earlier)
    return aggregates


def trend(recent: float | None, earlier: float | None) -> str:
    """Coarse direction of the last 7 days against the 23 days before them."""
    if recent is None or earlier is None:
        return "unknown"
    if abs(recent - earlier) <= abs(earlier) * TREND_TOLERANCE:
        return "flat"
    return "up" if recent > earlier else "down"


def summaries(definitions: list[MetricDefinition], now: datetime | None = None) -> dict[str, dict[str, Any]]:
    """Latest value, 7/30/90-day stats and trend for many metrics: two queries, however many there are."""
    now = now or timezone.now()
    ids = [definition.pk for definition in definitions]
    # Every window lies within the longest: older readings are not read (the range of `observation_series`).
    recent = Observation.objects.filter(
        definition__in=ids, occurred_at__gte=now - timedelta(days=max(WINDOWS)), occurred_at__lte=now
    )
    stats = {row["definition"]: row for row in recent.values("definition").annotate(**_window_aggregates(now))}
    # The newest reading of each metric from the end of its index range (a DISTINCT ON read every reading).
    newest = _newest(Observation.objects.filter(definition=OuterRef("pk")), now)
    latest = {
        row["pk"]: row
        for row in MetricDefinition.objects.filter(pk__in=ids)
        .annotate(value=Subquery(newest.values("value")[:1]), occurred_at=Subquery(newest.values("occurred_at")[:1]))
        .filter(occurred_at__isnull=False)
        .values("pk", "value", "occurred_at")
    }
    answer = {}
    for definition in definitions:
        row = stats.get(definition.pk, {})
        last = latest.get(definition.pk)
        windows = {
            f"{days}d": {
                "count": row.get(f"count_{days}", 0),
                "mean": row.get(f"mean_{days}"),
                "min": row.get(f"min_{days}"),
                "max": row.get(f"max_{days}"),
            }
            for days in WINDOWS
        }
        answer[definition.pk] = {
            "latest": {"value": last["value"], "occurredAt": last["occurred_at"]} if last else None,
            "windows": windows,
            "trend": trend(row.get("mean_7"), row.get("mean_before")),
            "meanBefore": row.get("mean_before"),
        }
    return answer


def metric_movers(access: Access, limit: int) -> list[dict[str, Any]]:
    """Metrics by their latest observation, newest first, with the change of the last 7 days' mean against
    the 23 days before (direction `unknown` when either is empty)."""
    definitions = list(definitions_in_reach(access))
    found = summaries(definitions)
    moved = [(definition, found[definition.pk]) for definition in definitions if found[definition.pk]["latest"]]
    moved.sort(key=lambda item: item[1]["latest"]["occurredAt"], reverse=True)
    movers = []
    for definition, summary in moved[:limit]:
        recent, before = summary["windows"]["7d"]["mean"], summary["meanBefore"]
        movers.append({
            "metricId": definition.pk, "slug": definition.slug, "label": definition.label, "unit": definition.unit,
            "latestValue": summary["latest"]["value"], "latestAt": summary["latest"]["occurredAt"],
            "delta": round(recent - before, 6) if recent is not None and before is not None else None,
            "direction": summary["trend"], "window": "last 7 days against the 23 days before",
        })  # fmt: skip
    return movers


SPARKLINE_DAYS = 90


@dataclass(frozen=True)
class MetricOverview:
    definition: MetricDefinition
    summary: dict[str, Any]
    recent: list[float]  # the mean of each day with readings in the last SPARKLINE_DAYS days, oldest first


def metrics_overview(access: Access, *, zone_name: str = "UTC") -> list[MetricOverview]:
    """Every metric in reach with its summary (latest value, windows, trend) and its recent daily means (a
    sparkline), by label: four queries however many metrics there are."""
    definitions = list(definitions_in_reach(access).order_by("label", "slug", "id"))
    found = summaries(definitions)
    now = timezone.now()
    days = (
        Observation.objects.filter(
            definition__in=definitions, occurred_at__gte=now - timedelta(days=SPARKLINE_DAYS), occurred_at__lte=now
        )
        .annotate(day=Trunc("occurred_at", "day", tzinfo=ZoneInfo(zone_name)))
        .values("definition", "day")
        .annotate(mean=Avg("value"))
        .order_by("definition", "day")
    )
    recent: dict[str, list[float]] = {}
    for row in days:
        recent.setdefault(row["definition"], []).append(row["mean"])
    return [MetricOverview(d, found[d.pk], recent.get(d.pk, [])) for d in definitions]


def readings(
    definition: MetricDefinition, *, since: datetime | None = None, until: datetime | None = None, limit: int = 200
) -> list[Observation]:
    """One metric's observations in [since, until), newest first, with the message each was read from."""
    observations = Observation.objects.filter(definition=definition)
    if since:
        observations = observations.filter(occurred_at__gte=since)
    if until:
        observations = observations.filter(occurred_at__lt=until)
    chosen = observations.select_related("source").defer("source__content", "source__markdown")
    return list(chosen.order_by("-occurred_at", "-id")[:limit])


def reading_for_access(access: Access, *, slug: str, observation_id: str) -> Observation:
    """One observation of the metric `slug` in reach; another metric's, or out of reach, is NOT_FOUND."""
    definition = definition_for_access(access, slug=slug)
    found = Observation.objects.filter(pk=observation_id, definition=definition)
    observation = found.select_related("definition", "source").defer("source__content", "source__markdown").first()
    if observation is None:
        raise NotFound("No such observation.", details={"observationId": observation_id})
    return observation


@dataclass(frozen=True)
class MetricPage:
    definition: MetricDefinition
    summary: dict[str, Any]
    points: list[Point]
    readings: list[Observation]


def metric_page(
    access: Access,
    *,
    slug: str,
    bucket: str | None,
    zone_name: str,
    since: datetime | None = None,
    until: datetime | None = None,
) -> MetricPage:
    """One metric for its web page: its summary, its series in [since, until) (raw, or bucketed in the time
    zone, as /metrics/series) and its readings in the same range, newest first."""
    definition = definition_for_access(access, slug=slug)
    return MetricPage(
        definition=definition,
        summary=summaries([definition])[definition.pk],
        points=series(definition, bucket=bucket, zone_name=zone_name, since=since, until=until),
        readings=readings(definition, since=since, until=until),
    )

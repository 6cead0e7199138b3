"""Metrics over REST (seeds/000): record observations (one, or many of existing metrics), list metrics, read
a series raw or bucketed in a time zone, and summaries of one or many metrics."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer, StrictSerializer
from memory.api.fields import plausible_time
from memory.api.openapi import count, flag, many, mapping, maybe_text, maybe_when, number, one, shape, text, texts, when
from memory.api.recall import TimeZoneField
from metrics.models import Aggregation, MetricDefinition
from metrics.selectors import definition_for_access, definitions_in_reach, definitions_with_stats, series, summaries
from metrics.services import observation_record, observations_bulk

SLUG = r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$"
LARGEST = 1e15  # sums of many readings must stay finite


def plausible_value(value: float) -> None:
    if abs(value) > LARGEST:
        raise serializers.ValidationError(f"Values up to {LARGEST:g} in size are accepted.")


# seeds/000 spells the mean "avg" in `aggregationHint`; the other hints are spelt as stored.
HINT_TO_AGGREGATION: dict[str, str] = {"avg": Aggregation.MEAN}
AGGREGATION_TO_HINT: dict[str, str] = {Aggregation.MEAN: "avg"}
HINTS = ["avg", *Aggregation.values]


def definition_json(definition: MetricDefinition) -> dict[str, Any]:
    return {
        "metricId": definition.pk,
        "slug": definition.slug,
        "label": definition.label,
        "unit": definition.unit,
        "description": definition.description,
        "aggregation": definition.aggregation,
        "aggregationHint": AGGREGATION_TO_HINT.get(definition.aggregation, definition.aggregation),
        "needsReview": definition.needs_review,
        "resembles": definition.resembles_id,
        "reviewTaskId": definition.review_task_id,
        "partitionKey": definition.partition.key,
    }


DefinitionOut = shape(
    "MetricDefinitionOut",
    metricId=text(), slug=text(), label=text(allow_blank=True), unit=text(allow_blank=True),
    description=text(allow_blank=True), aggregation=serializers.ChoiceField(choices=Aggregation.values),
    aggregationHint=serializers.ChoiceField(choices=HINTS, help_text="seeds/000's spelling: avg is the mean."),
    needsReview=flag(), resembles=maybe_text(), reviewTaskId=maybe_text(), partitionKey=text(),
)  # fmt: skip
WindowOut = shape(
    "MetricWindowOut", count=count(), mean=number(allow_null=True), min=number(allow_null=True),
    max=number(allow_null=True),
)  # fmt: skip
SummaryOut = shape(
    "MetricSummaryOut",
    metric=one(DefinitionOut), latest=one(shape("LatestOut", value=number(), occurredAt=when()), allow_null=True),
    windows=serializers.DictField(child=WindowOut(), help_text="7d, 30d, 90d."), trend=text(),
    meanBefore=number(allow_null=True),
)  # fmt: skip


class MetricIn(StrictSerializer):
    """The metric of an observation as seeds/000 writes it."""

    slug = serializers.RegexField(SLUG, max_length=64)
    label = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)  # type: ignore[assignment]
    description = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)
    unit = serializers.CharField(max_length=20, required=False, default="", allow_blank=True)
    aggregationHint = serializers.ChoiceField(choices=HINTS, required=False, help_text="avg is the mean.")


# The fields `metric` carries, in the flat form of the same request.
METRIC_FIELDS = ("slug", "label", "unit", "description", "aggregation")


class ObservationIn(RequestSerializer):
    """Either seeds/000's `metric` object or the flat `slug` (+ label, unit, description, aggregation)."""

    metric = MetricIn(required=False, help_text="The metric, as seeds/000 writes it; or give `slug` instead.")
    slug = serializers.RegexField(SLUG, max_length=64, required=False, help_text="Required unless `metric` is given.")
    value = serializers.FloatField(validators=[plausible_value])
    occurredAt = serializers.DateTimeField(required=False, validators=[plausible_time])
    note = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)
    label = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)  # type: ignore[assignment]
    unit = serializers.CharField(max_length=20, required=False, default="", allow_blank=True)
    description = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)
    aggregation = serializers.ChoiceField(choices=Aggregation.values, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        metric = attrs.pop("metric", None)
        if metric is None:
            if "slug" not in attrs:
                raise serializers.ValidationError({"slug": ["This field is required."]})
            return attrs
        doubled = [name for name in METRIC_FIELDS if name in self.initial_data]
        if doubled:
            where = "metric" if doubled == ["slug"] else doubled[0]
            raise serializers.ValidationError({where: ["Give the metric either as `metric` or as flat fields."]})
        hint = metric.pop("aggregationHint", None)
        if hint is not None:
            metric["aggregation"] = HINT_TO_AGGREGATION.get(hint, hint)
        return {**attrs, **metric}


class MetricsObservations(Endpoint):
    """Record one observation (needs `write`); the metric is created on first use. The metric is seeds/000's
    `metric` object (slug, label, description, unit, aggregationHint) or the flat `slug` with label, unit,
    description and aggregation. A new metric that looks like an existing one is created with `needsReview`
    and a review task among the candidate commitments."""

    tool = "metrics.observations"
    response_schema = shape(
        "ObservationOut", observationId=text(), value=number(), occurredAt=when(), metric=one(DefinitionOut),
        metricCreated=flag(),
    )  # fmt: skip
    request_serializer = ObservationIn
    example_request = {"slug": "body_weight", "value": 78.2, "unit": "kg"}
    success_status = 201

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        observation, resolved = observation_record(
            access, slug=data["slug"], value=data["value"], occurred_at=data.get("occurredAt") or timezone.now(),
            note=data["note"], label=data["label"], unit=data["unit"], description=data["description"],
            aggregation=data.get("aggregation", ""),
        )  # fmt: skip
        return {
            "observationId": observation.pk,
            "value": observation.value,
            "occurredAt": observation.occurred_at,
            "metric": definition_json(resolved.definition),
            "metricCreated": resolved.created,
        }


class BulkRowIn(serializers.Serializer):
    slug = serializers.RegexField(SLUG, max_length=64)
    value = serializers.FloatField(validators=[plausible_value])
    occurredAt = serializers.DateTimeField(validators=[plausible_time])
    note = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)


class BulkIn(RequestSerializer):
    observations = serializers.ListField(child=BulkRowIn(), min_length=1, max_length=1000)


class MetricsObservationsBulk(Endpoint):
    """Many observations of existing metrics (needs `write`): unknown slugs come back as per-row errors and
    the rest is stored."""

    tool = "metrics.observations_bulk"
    response_schema = shape(
        "BulkOut", stored=count(), observationIds=texts(), errors=serializers.ListField(child=mapping()),
    )  # fmt: skip
    request_serializer = BulkIn
    example_request = {"observations": [{"slug": "body_weight", "value": 78.2, "occurredAt": "2026-04-22T07:00:00Z"}]}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        outcome = observations_bulk(access, data["observations"])
        return {
            "stored": len(outcome.stored),
            "observationIds": [observation.pk for observation in outcome.stored],
            "errors": outcome.errors,
        }


class MetricsList(Endpoint):
    """Every metric with its unit, review state and light stats (count, first and last time, latest value)."""

    tool = "metrics.list"
    response_schema = shape(
        "MetricsOut",
        metrics=many(type("MetricStatsOut", (DefinitionOut,), {
            "__module__": __name__, "count": count(), "firstAt": maybe_when(), "lastAt": maybe_when(),
            "latestValue": number(allow_null=True),
        })),
    )  # fmt: skip

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "metrics": [
                {
                    **definition_json(definition),
                    "count": definition.count,  # type: ignore[attr-defined]
                    "firstAt": definition.first_at,  # type: ignore[attr-defined]
                    "lastAt": definition.last_at,  # type: ignore[attr-defined]
                    "latestValue": definition.latest_value,  # type: ignore[attr-defined]
                }
                for definition in definitions_with_stats(access)
            ]
        }


class MetricRefIn(RequestSerializer):
    metricId = serializers.CharField(max_length=40, required=False)
    slug = serializers.RegexField(SLUG, max_length=64, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if bool(attrs.get("metricId")) == bool(attrs.get("slug")):
            raise serializers.ValidationError({"metricId": ["Give metricId or slug (one of them)."]})
        return attrs


class SeriesIn(MetricRefIn):
    bucket = serializers.ChoiceField(choices=["raw", "day", "week", "month"], default="raw")
    timeZone = TimeZoneField(max_length=64, required=False, default=settings.TIME_ZONE)
    since = serializers.DateTimeField(required=False, validators=[plausible_time])
    until = serializers.DateTimeField(required=False, validators=[plausible_time])
    aggregation = serializers.ChoiceField(choices=Aggregation.values, required=False)


class MetricsSeries(Endpoint):
    """A metric's observations, raw or one value per day / week / month in `timeZone`, aggregated by the
    metric's hint (mean, sum, last, min, max) unless `aggregation` says otherwise."""

    tool = "metrics.series"
    response_schema = shape(
        "SeriesOut", metric=one(DefinitionOut), bucket=text(), timeZone=text(), aggregation=text(),
        points=many(shape("PointOut", at=when(), value=number(), count=count())),
    )  # fmt: skip
    request_serializer = SeriesIn
    example_request = {"slug": "body_weight", "bucket": "week"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        definition = definition_for_access(access, metric_id=data.get("metricId"), slug=data.get("slug"))
        bucket = None if data["bucket"] == "raw" else data["bucket"]
        points = series(
            definition, bucket=bucket, zone_name=data["timeZone"], since=data.get("since"), until=data.get("until"),
            aggregation=data.get("aggregation"),
        )  # fmt: skip
        return {
            "metric": definition_json(definition),
            "bucket": data["bucket"],
            "timeZone": data["timeZone"],
            "aggregation": data.get("aggregation") or definition.aggregation,
            "points": [{"at": point.at, "value": point.value, "count": point.count} for point in points],
        }


class MetricsSummary(Endpoint):
    """One metric (by `metricId` or `slug`): latest value, 7/30/90-day count, mean, min and max, and a coarse
    trend (last 7 days against the 23 before)."""

    tool = "metrics.summary"
    response_schema = SummaryOut
    request_serializer = MetricRefIn
    example_request = {"slug": "body_weight"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        definition = definition_for_access(access, metric_id=data.get("metricId"), slug=data.get("slug"))
        return {"metric": definition_json(definition), **summaries([definition])[definition.pk]}


class SummariesIn(RequestSerializer):
    metricIds = serializers.ListField(child=serializers.CharField(max_length=40), required=False, max_length=200)
    slugs = serializers.ListField(child=serializers.RegexField(SLUG, max_length=64), required=False, max_length=200)


class MetricsSummaries(Endpoint):
    """Summaries of many metrics in one round trip (all of them when none are named)."""

    tool = "metrics.summaries"
    response_schema = shape("SummariesOut", summaries=many(SummaryOut))
    request_serializer = SummariesIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        definitions = definitions_in_reach(access)
        if data.get("metricIds") or data.get("slugs"):
            definitions = definitions.filter(pk__in=data.get("metricIds") or []) | definitions.filter(
                slug__in=data.get("slugs") or []
            )
        chosen = list(definitions.select_related("partition").order_by("slug", "id")[:200])
        found = summaries(chosen)
        return {"summaries": [{"metric": definition_json(d), **found[d.pk]} for d in chosen]}

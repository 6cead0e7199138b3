"""Metrics in the Django admin: definitions (with their review state) and observations, read-only."""

from __future__ import annotations

from django.contrib import admin

from memory.admin_base import ReadOnlyAdmin, heavy, vocabulary_filter
from metrics.models import MetricDefinition, Observation


def _slugs() -> list[str]:
    return list(MetricDefinition.objects.order_by().values_list("slug", flat=True).distinct())


@admin.register(MetricDefinition)
class MetricDefinitionAdmin(ReadOnlyAdmin):
    list_display = ("slug", "label", "unit", "aggregation", "owner", "partition", "needs_review", "created_at")
    list_filter = ("needs_review", "aggregation")
    search_fields = ("slug", "label", "owner__username")
    list_select_related = ("owner", "partition")
    exclude = ("embedding",)
    deferred = heavy("metricdefinition")


@admin.register(Observation)
class ObservationAdmin(ReadOnlyAdmin):
    list_display = ("definition", "value", "occurred_at", "owner", "source")
    # A search names an owner exactly (the owner's index), not a substring of every reading's note and slug; a
    # metric is chosen by its slug in the filter (a slug outside the definitions is the admin's invalid filter).
    list_filter = (vocabulary_filter("definition__slug", "metric", _slugs),)
    exact_search = ("owner__username",)
    search_help_text = "An owner's username, exactly; choose a metric in the filter."
    list_select_related = ("definition", "owner", "source")
    deferred = heavy("metricdefinition", "definition") + heavy("source", "source")

"""Metrics in the Django admin: definitions (with their review state) and observations, read-only."""

from __future__ import annotations

from django.contrib import admin

from memory.admin import ReadOnlyAdmin
from metrics.models import MetricDefinition, Observation


@admin.register(MetricDefinition)
class MetricDefinitionAdmin(ReadOnlyAdmin):
    list_display = ("slug", "label", "unit", "aggregation", "owner", "partition", "needs_review", "created_at")
    list_filter = ("needs_review", "aggregation")
    search_fields = ("slug", "label", "owner__username")
    exclude = ("embedding",)


@admin.register(Observation)
class ObservationAdmin(ReadOnlyAdmin):
    list_display = ("definition", "value", "occurred_at", "owner", "source")
    list_filter = ("definition__slug",)
    list_select_related = ("definition", "owner")

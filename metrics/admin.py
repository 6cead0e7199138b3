"""Metrics in the Django admin: definitions (with their review state) and observations, read-only."""

from __future__ import annotations

from django.contrib import admin

from memory.admin_base import ReadOnlyAdmin, heavy
from metrics.models import MetricDefinition, Observation


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
    list_filter = ("definition__slug",)
    search_fields = ("definition__slug", "note", "owner__username")
    list_select_related = ("definition", "owner", "source")
    deferred = heavy("metricdefinition", "definition") + heavy("source", "source")

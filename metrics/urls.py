from __future__ import annotations

from django.urls import path

from memory.api import erasure
from metrics import api

urlpatterns = [
    path("metrics/observations", api.MetricsObservations.as_view()),
    path("metrics/observations/bulk", api.MetricsObservationsBulk.as_view()),
    path("metrics/list", api.MetricsList.as_view()),
    path("metrics/series", api.MetricsSeries.as_view()),
    path("metrics/summary", api.MetricsSummary.as_view()),
    path("metrics/summaries", api.MetricsSummaries.as_view()),
    path("metrics/observations/erase", erasure.ObservationsErase.as_view()),
    path("metrics/definitions/erase", erasure.DefinitionErase.as_view()),
]

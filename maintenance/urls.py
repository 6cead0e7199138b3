from __future__ import annotations

from django.urls import URLPattern, path

from maintenance import api_upkeep

urlpatterns: list[URLPattern] = [
    path("maintenance/reap", api_upkeep.MaintenanceReap.as_view()),
    path("maintenance/embeddings/status", api_upkeep.EmbeddingsStatus.as_view()),
    path("maintenance/embeddings/reindex", api_upkeep.EmbeddingsReindex.as_view()),
]

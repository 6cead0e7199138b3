from __future__ import annotations

from django.urls import URLPattern, path

from maintenance import api, api_upkeep, export_api

urlpatterns: list[URLPattern] = [
    path("maintenance/export", export_api.Export.as_view()),
    path("maintenance/prune-stale-nodes", api.PruneStaleNodes.as_view()),
    path("maintenance/prune-orphan-nodes", api.PruneOrphanNodes.as_view()),
    path("cleanup/dedup-sweep", api.DedupSweep.as_view()),
    path("cleanup", api.Cleanup.as_view()),
    path("maintenance/reap", api_upkeep.MaintenanceReap.as_view()),
    path("maintenance/embeddings/status", api_upkeep.EmbeddingsStatus.as_view()),
    path("maintenance/embeddings/reindex", api_upkeep.EmbeddingsReindex.as_view()),
]

from __future__ import annotations

from django.urls import URLPattern, path

from maintenance import api, export_api

urlpatterns: list[URLPattern] = [
    path("maintenance/export", export_api.Export.as_view()),
    path("maintenance/prune-stale-nodes", api.PruneStaleNodes.as_view()),
    path("maintenance/prune-orphan-nodes", api.PruneOrphanNodes.as_view()),
    path("cleanup/dedup-sweep", api.DedupSweep.as_view()),
    path("cleanup", api.Cleanup.as_view()),
]

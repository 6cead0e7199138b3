from __future__ import annotations

from django.urls import path

from memory.web import dashboard, sources, views

app_name = "ui"
urlpatterns = [
    path("", dashboard.home, name="home"),
    path("partition", views.switch_partition, name="switch-partition"),
    path("sources/", sources.source_list, name="sources-list"),
    path("sources/upload/", sources.source_upload, name="sources-upload"),
    path("sources/<str:source_id>/", sources.source_detail, name="sources-detail"),
    path("sources/<str:source_id>/original", sources.source_original, name="sources-original"),
    path("sources/<str:source_id>/retry", sources.source_retry, name="sources-retry"),
    path("sources/<str:source_id>/delete", sources.source_delete, name="sources-delete"),
]

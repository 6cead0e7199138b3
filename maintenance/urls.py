from __future__ import annotations

from django.urls import URLPattern, path

from maintenance import api

urlpatterns: list[URLPattern] = [
    path("maintenance/export", api.Export.as_view()),
]

from __future__ import annotations

from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"

from __future__ import annotations

from django.apps import AppConfig


class MaintenanceConfig(AppConfig):
    name = "maintenance"

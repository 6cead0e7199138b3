from __future__ import annotations

from django.apps import AppConfig


class CommitmentsConfig(AppConfig):
    name = "commitments"

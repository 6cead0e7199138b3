"""GET /healthz reports the database, Redis, the worker and migrations."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_health_reports_every_dependency(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert (body["db"], body["redis"], body["migrations"]) == ("ok", "ok", "current")
    assert body["worker"] in {"ok", "absent"}


def test_health_needs_no_credentials_and_only_answers_get(client: Client) -> None:
    assert client.post("/healthz").status_code == 405

"""GET /healthz reports the database, Redis, the worker and migrations."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from tests.process import celery_worker

pytestmark = pytest.mark.django_db


def test_health_reports_every_dependency_and_no_worker_when_none_runs(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body == {"status": "ok", "db": "ok", "redis": "ok", "worker": "absent", "migrations": "current"}


@pytest.mark.server
def test_health_reports_a_running_worker(client: Client) -> None:
    with celery_worker(connection.settings_dict["NAME"]):
        body = client.get("/healthz").json()
    assert (body["status"], body["worker"]) == ("ok", "ok")


def test_health_needs_no_credentials_and_only_answers_get(client: Client) -> None:
    assert client.post("/healthz").status_code == 405

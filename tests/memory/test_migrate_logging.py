"""`migrate` logs started / completed with progress fields and never SQL or connection strings."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings
from django.core.management import call_command

from config.logs import JsonFormatter

pytestmark = pytest.mark.django_db


def test_migrate_logs_start_and_completion(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="memory.migrations"):
        call_command("migrate", verbosity=0)
    events = [record.getMessage() for record in caplog.records if record.name == "memory.migrations"]
    assert events[0] == "database.migrations.started"
    assert events[-1] == "database.migrations.completed"
    completed = caplog.records[-1]
    assert completed.phase == "applying"  # type: ignore[attr-defined]
    assert completed.elapsedMs >= 0  # type: ignore[attr-defined]
    assert completed.statementsStarted > 0  # type: ignore[attr-defined]
    text = " ".join(JsonFormatter().format(record) for record in caplog.records)
    assert "SELECT" not in text
    assert "pg_advisory" not in text
    assert settings.DATABASE_URL not in text
    assert "postgres" not in text


def test_failed_migration_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    from django.core.management.base import CommandError

    with caplog.at_level(logging.INFO, logger="memory.migrations"), pytest.raises(CommandError):
        call_command("migrate", "memory", "9999_missing", verbosity=0)
    assert caplog.records[-1].getMessage() == "database.migrations.failed"
    assert caplog.records[-1].error == "CommandError"  # type: ignore[attr-defined]

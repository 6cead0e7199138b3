"""The importers as a person runs them: `manage.py import_…` in its own process, a real Celery worker
processing what it queued on commit, and the exit status a script sees. (Committed data.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.db import connection

from memory.models import Operation, OperationStatus
from tests.conftest import Api, Persona
from tests.importers.helpers import SAMPLES, found
from tests.process import celery_worker, child_env, manage

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.server]


def settled(timeout: float = 120) -> list[str]:
    """The receipts' statuses once none is queued or processing any more."""
    deadline = time.monotonic() + timeout
    while True:
        statuses = list(Operation.objects.values_list("status", flat=True))
        busy = {OperationStatus.QUEUED, OperationStatus.PROCESSING} & set(statuses)
        if not busy or time.monotonic() > deadline:
            return statuses
        time.sleep(0.3)


def test_an_imported_export_is_processed_by_the_worker_and_found(api: Api, owner: Persona) -> None:
    env = child_env(connection.settings_dict["NAME"])
    with celery_worker(connection.settings_dict["NAME"]):
        result = manage("import_claude", str(SAMPLES / "claude_conversations.json"), "--user", "alice", env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("imported: 3 conversations, 7 messages; already there: nothing;")
        assert settled() == [OperationStatus.COMPLETED] * 3
    assert "barrel adjuster" in found(api, owner, "cable tension barrel adjuster derailleur")
    again = manage("import_claude", str(SAMPLES / "claude_conversations.json"), "--user", "alice", env=env)
    assert again.stdout.startswith("imported: nothing; already there: 3 conversations, 7 messages;")
    assert Operation.objects.count() == 3


def test_a_bad_file_exits_with_status_2_and_says_why(owner: Persona, tmp_path: Path) -> None:
    bad = tmp_path / "conversations.json"
    bad.write_text('{"not": "a list"}')
    result = manage("import_chatgpt", str(bad), "--user", "alice", env=child_env(connection.settings_dict["NAME"]))
    assert result.returncode == 2
    assert "A ChatGPT export (conversations.json): expected a list, found an object." in result.stderr
    assert result.stdout == ""

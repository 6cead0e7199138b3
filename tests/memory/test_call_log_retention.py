"""The call log's retention (TOOL_EVENTS_KEEP_DAYS): calls older than the period are deleted, oldest first, a
batch a transaction, by beat once a day or by `manage.py prune_call_log`; the audit trail is not touched."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from celery.schedules import crontab
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.errors import ValidationFailed
from memory.models import MemoryEvent, ToolEvent, User
from memory.services.telemetry import tool_events_prune
from tests.process import ROOT

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.get_current_timezone())


def call(owner: User | None, days_ago: float, tool: str = "search_memory") -> ToolEvent:
    return ToolEvent.objects.create(
        owner=owner, surface="rest", tool=tool, status_code=200, outcome="ok", duration_ms=3,
        created_at=NOW - timedelta(days=days_ago),
    )  # fmt: skip


def kept() -> list[str]:
    return list(ToolEvent.objects.order_by("pk").values_list("tool", flat=True))


def test_calls_older_than_the_period_are_deleted_for_everyone(alice: User, bob: User) -> None:
    call(alice, 200, "a-200"), call(None, 120, "outsider-120"), call(bob, 91, "b-91")
    call(alice, 89, "a-89"), call(bob, 1, "b-1"), call(None, 0, "outsider-0")
    MemoryEvent.objects.create(owner=alice, actor_kind="system", action="claim.create", target_type="claim",
                               target_id="claim_x", created_at=NOW - timedelta(days=400))  # fmt: skip

    result = tool_events_prune(keep_days=90, now=NOW)

    assert (result.deleted, result.cutoff, result.dry_run) == (3, NOW - timedelta(days=90), False)
    assert kept() == ["a-89", "b-1", "outsider-0"]
    assert MemoryEvent.objects.filter(owner=alice).count() == 1  # the owner's record is not telemetry


def test_a_call_written_late_waits_for_a_later_run(alice: User) -> None:
    """A row's id comes from when it was written, its time from when the call was made: a call written after the
    first call of the kept period (a late batch) is past the walk, and goes when a later run's walk reaches it."""
    call(alice, 95, "old"), call(alice, 10, "first kept"), call(alice, 92, "old, written late")

    assert tool_events_prune(keep_days=90, now=NOW).deleted == 1
    assert kept() == ["first kept", "old, written late"]
    assert tool_events_prune(keep_days=5, now=NOW).deleted == 2
    assert kept() == []


def test_a_large_log_is_deleted_a_batch_a_statement(alice: User) -> None:
    for days in range(100, 107):
        call(alice, days, f"old-{days}")
    call(alice, 3, "recent")

    with CaptureQueriesContext(connection) as statements:
        result = tool_events_prune(keep_days=90, now=NOW, batch=3)

    deletes = [q["sql"] for q in statements.captured_queries if q["sql"].startswith("DELETE")]
    assert result.deleted == 7 and kept() == ["recent"]
    assert len(deletes) == 3  # 3 + 3 + 1 rows, one id range each, never a row at a time
    assert all('"memory_toolevent"."id" >' in sql and '"memory_toolevent"."id" <=' in sql for sql in deletes)


def test_a_dry_run_counts_and_deletes_nothing(alice: User) -> None:
    call(alice, 100), call(alice, 95), call(alice, 2)
    result = tool_events_prune(keep_days=90, now=NOW, dry_run=True)
    assert (result.deleted, result.dry_run) == (2, True)
    assert ToolEvent.objects.count() == 3


def test_zero_days_keeps_every_call(alice: User) -> None:
    call(alice, 5000)
    result = tool_events_prune(keep_days=0, now=NOW)
    assert (result.deleted, result.cutoff) == (0, None)
    assert ToolEvent.objects.count() == 1


@pytest.mark.parametrize("days", [-1, 36_501])
def test_a_period_out_of_range_is_refused_and_nothing_deleted(alice: User, days: int) -> None:
    call(alice, 100)
    with pytest.raises(ValidationFailed, match="must be from 0"):
        tool_events_prune(keep_days=days, now=NOW)
    assert ToolEvent.objects.count() == 1


def test_the_setting_is_the_default_period(alice: User, settings: Any) -> None:
    call(alice, 40, "40 days"), call(alice, 20, "20 days")
    settings.TOOL_EVENTS_KEEP_DAYS = 30
    assert tool_events_prune(now=NOW).keep_days == 30
    assert kept() == ["20 days"]


# --- beat and the command -------------------------------------------------------------------------------------


def test_beat_prunes_at_a_time_of_day_with_the_default_of_ninety_days(alice: User) -> None:
    from config.celery import app
    from memory.tasks import prune_call_log

    entries = [entry for entry in settings.CELERY_BEAT_SCHEDULE.values() if entry["task"] == "memory.prune_call_log"]
    assert [entry["schedule"] for entry in entries] == [crontab(hour=3, minute=17)]  # daily, whenever beat started
    assert settings.TOOL_EVENTS_KEEP_DAYS == 90
    app.autodiscover_tasks(force=True)
    assert "memory.prune_call_log" in app.tasks

    now = timezone.now()
    ToolEvent.objects.create(owner=alice, surface="mcp", tool="old", status_code=200, outcome="ok", duration_ms=1,
                             created_at=now - timedelta(days=91))  # fmt: skip
    ToolEvent.objects.create(owner=alice, surface="mcp", tool="new", status_code=200, outcome="ok", duration_ms=1)
    assert prune_call_log()["deleted"] == 1
    assert kept() == ["new"]


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    script = (
        "import django; django.setup(); from django.conf import settings; print(sorted(settings.CELERY_BEAT_SCHEDULE))"
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", **env},
    )  # fmt: skip


def test_zero_days_leaves_beat_without_the_task_and_a_period_out_of_range_is_refused() -> None:
    off = settings_with(TOOL_EVENTS_KEEP_DAYS="0")
    assert off.returncode == 0, off.stderr
    assert "prune-call-log" not in off.stdout and "reap-claims" in off.stdout
    for wrong in ("-3", "999999"):
        refused = settings_with(TOOL_EVENTS_KEEP_DAYS=wrong)
        assert refused.returncode != 0
        assert f"TOOL_EVENTS_KEEP_DAYS must be from 0 (keep every call) to 36500, got {wrong}" in refused.stderr


def test_the_command_deletes_or_counts(alice: User) -> None:
    now = timezone.now()
    for days in (40, 35, 2):
        ToolEvent.objects.create(owner=alice, surface="rest", tool=f"{days}", status_code=200, outcome="ok",
                                 duration_ms=1, created_at=now - timedelta(days=days))  # fmt: skip
    out = StringIO()
    call_command("prune_call_log", "--days", "30", "--dry-run", stdout=out)
    assert out.getvalue().startswith("2 calls from before ") and "would be deleted" in out.getvalue()
    assert ToolEvent.objects.count() == 3

    out = StringIO()
    call_command("prune_call_log", "--days", "30", stdout=out)
    assert out.getvalue().strip().endswith("UTC deleted.") and kept() == ["2"]

    out = StringIO()
    call_command("prune_call_log", "--days", "0", stdout=out)
    assert "Every call is kept" in out.getvalue() and kept() == ["2"]
    for wrong in ("-1", "36501"):
        with pytest.raises(CommandError, match="--days must be from 0"):
            call_command("prune_call_log", "--days", wrong)


# --- the admin ------------------------------------------------------------------------------------------------


def test_the_admin_call_log_says_how_long_calls_are_kept(admin_client: Client, settings: Any) -> None:
    page = admin_client.get("/admin/memory/toolevent/")
    assert page.status_code == 200
    assert "Calls are kept for 90 days, then deleted (TOOL_EVENTS_KEEP_DAYS)." in page.content.decode()
    settings.TOOL_EVENTS_KEEP_DAYS = 0
    assert (
        "Every call is kept (TOOL_EVENTS_KEEP_DAYS)." in admin_client.get("/admin/memory/toolevent/").content.decode()
    )

"""Fresh data is fast: after the pipeline changed many rows, the memory tables have planner statistics at once
(issue 18), not a minute later when autovacuum gets round to them. Real PostgreSQL, Redis and Celery worker."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from memory.models import Claim, Node
from memory.services import planner_statistics
from memory.services.planner_statistics import TABLES, planner_statistics_refresh, recently_analysed_key
from memory.tasks import refresh_planner_statistics
from tests.conftest import Api, Persona
from tests.factories import ClaimFactory, NodeFactory
from tests.process import celery_worker

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def without_autovacuum() -> Iterator[None]:
    """Autovacuum off on the memory tables, so what analyses them in the test is the pipeline (autovacuum may
    wake at any moment and would both pass a broken check and reset what it looks at)."""
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    yield
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")


def forget_recent_analyses() -> None:
    cache.delete_many([recently_analysed_key(table) for table in TABLES])


@pytest.fixture
def long_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interval no slow machine outlasts while the test writes its rows (300 nodes took over the 2 s of
    ANALYZE_INTERVAL_S on a loaded CI machine); the test ends it itself with forget_recent_analyses()."""
    monkeypatch.setattr(planner_statistics, "ANALYZE_INTERVAL_S", 600)


def same(first: Any, second: Any) -> bool:
    return bool(first == second)


def analyzed(table: str) -> Any:
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = %s", [table])
        return cursor.fetchone()[0]


@pytest.mark.server
def test_a_large_conversation_leaves_the_chunk_and_claim_tables_analyzed(
    api: Api, owner: Persona, without_autovacuum: None
) -> None:
    forget_recent_analyses()
    things = [
        "spec",
        "budget",
        "slides",
        "invoice",
        "contract",
        "agenda",
        "report",
        "minutes",
        "draft",
        "plan",
        "photos",
        "keys",
        "tickets",
        "receipts",
        "notes",
        "schedule",
        "quote",
        "menu",
        "poster",
        "survey",
    ]
    people = ["Marcel", "Ilse", "Anna", "Pieter", "Sofie", "Daan", "Emma", "Lucas", "Julia", "Sem", "Tess", "Bram"]
    texts = [f"I'll send the {thing} to {person} by Friday." for thing in things for person in people]
    messages = [
        {"id": f"m{n}", "role": "user", "content": text, "timestamp": "2026-04-22T10:00:00Z"}
        for n, text in enumerate(texts)
    ]
    tables = ["memory_chunk", "memory_claim", "memory_source"]
    before = [analyzed(table) for table in tables]
    # Every mention a new task, each with its status and due date: more claims than the default cap of writes.
    with celery_worker(connection.settings_dict["NAME"], STEWARD_MAX_WRITES_PER_JOB="1000"):
        receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": "big", "messages": messages}}).json()
        deadline = time.monotonic() + 120
        # The worker analyses after it finished the job: wait for that (or give up), then check.
        while any(map(same, before, map(analyzed, tables))) and time.monotonic() < deadline:
            time.sleep(0.2)
        body = api.post("/source/processing/get", owner, {"operationId": receipt["operationId"]}).json()
    assert body["status"] == "completed", body
    assert body["counts"]["chunks"] == 240
    assert not any(map(same, before, map(analyzed, tables))), str(body["counts"])


def test_a_few_changed_rows_are_not_worth_an_analyze(alice: Any, without_autovacuum: None) -> None:
    forget_recent_analyses()
    before = analyzed(Claim._meta.db_table)
    ClaimFactory.create_batch(3, owner=alice)
    assert planner_statistics_refresh() == []
    assert analyzed(Claim._meta.db_table) == before


def test_a_table_is_analysed_at_most_once_per_interval_across_workers(
    alice: Any, without_autovacuum: None, long_interval: None
) -> None:
    forget_recent_analyses()
    NodeFactory.create_batch(300, owner=alice)
    assert Node._meta.db_table in planner_statistics_refresh()
    before = analyzed(Node._meta.db_table)
    NodeFactory.create_batch(300, owner=alice)
    # It was analysed a moment ago (the key in Redis, whichever worker did it): left to a later check.
    assert Node._meta.db_table not in planner_statistics_refresh()
    assert analyzed(Node._meta.db_table) == before
    forget_recent_analyses()
    assert Node._meta.db_table in planner_statistics_refresh()
    assert analyzed(Node._meta.db_table) != before


def test_autovacuum_analyses_the_memory_tables_after_a_small_share_of_changes() -> None:
    # The backstop for changes the pipeline's check does not see (API writes, erasure, a check skipped).
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, reloptions FROM pg_class WHERE relname = ANY(%s)", [list(TABLES)])
        options = dict(cursor.fetchall())
    assert sorted(options) == sorted(TABLES)
    for table in TABLES:
        assert "autovacuum_analyze_scale_factor=0.02" in (options[table] or []), table
        assert "autovacuum_analyze_threshold=200" in (options[table] or []), table


def test_beat_analyses_what_a_job_left_to_a_later_check(
    alice: Any, without_autovacuum: None, long_interval: None
) -> None:
    forget_recent_analyses()
    NodeFactory.create_batch(300, owner=alice)
    assert Node._meta.db_table in planner_statistics_refresh()
    NodeFactory.create_batch(300, owner=alice)  # the last job of an ingestion: its check comes too soon after
    assert Node._meta.db_table not in planner_statistics_refresh()
    before = analyzed(Node._meta.db_table)
    forget_recent_analyses()  # the interval has passed
    schedule = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule["memory.refresh_planner_statistics"] <= 60
    assert Node._meta.db_table in refresh_planner_statistics.apply().get()
    assert analyzed(Node._meta.db_table) != before

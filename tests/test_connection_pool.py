"""The web process's pool lends only connections the server has not ended, and asks the server nothing to know it
of an idle one (config.database). Connections are really ended by the server (pg_terminate_backend); what a check
sends is read from libpq's own protocol trace."""

from __future__ import annotations

import contextlib
import datetime
import select
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from django.db import connection
from psycopg.pq import Format

import config.database
from config.database import connection_alive, connection_given_back
from config.database.base import DatabaseWrapper
from config.database.timestamps import TIMESTAMPTZ_OID, UtcTimestamptzLoader
from memory.models import Claim, Scope, User
from tests.conftest import issue
from tests.process import AsgiService, served_on_test_database

pytestmark = pytest.mark.django_db(transaction=True)


def _params() -> dict[str, Any]:
    params = connection.get_connection_params()
    for name in ("cursor_factory", "context"):
        params.pop(name, None)
    return params


@pytest.fixture
def idle() -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(**_params(), autocommit=True) as conn:
        conn.execute("SELECT 1")
        yield conn


def _end(*pids: int) -> None:
    """The server ends these sessions, as a restart or an admin would; returns once they are gone."""
    with psycopg.connect(**_params(), autocommit=True) as admin:
        for pid in pids:
            assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,)).fetchone() == (True,)


@contextlib.contextmanager
def _traced(conn: psycopg.Connection[Any], path: Path) -> Iterator[None]:
    with path.open("w") as trace:
        conn.pgconn.trace(trace.fileno())
        try:
            yield
        finally:
            conn.pgconn.untrace()


def test_a_connection_given_back_moments_ago_is_lent_without_a_round_trip(
    idle: psycopg.Connection[Any], tmp_path: Path
) -> None:
    connection_given_back(idle)
    trace = tmp_path / "trace"
    with _traced(idle, trace):
        connection_alive(idle)
    assert trace.read_text() == ""
    with _traced(idle, trace):
        idle.execute("SELECT 1")
    assert "SELECT 1" in trace.read_text()  # the trace does see what a connection sends


def test_a_connection_quiet_for_longer_is_asked(
    idle: psycopg.Connection[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link that died without a word shows nothing on the socket: past QUIET_SECONDS the round trip decides."""
    connection_given_back(idle)
    monkeypatch.setattr(config.database, "QUIET_SECONDS", 0.0)
    trace = tmp_path / "trace"
    with _traced(idle, trace):
        connection_alive(idle)
    assert "Query" in trace.read_text()


def test_a_connection_with_something_to_read_is_asked_and_stays_usable(
    idle: psycopg.Connection[Any], tmp_path: Path
) -> None:
    connection_given_back(idle)
    idle.execute("LISTEN pool_check")
    with psycopg.connect(**_params(), autocommit=True) as other:
        other.execute("NOTIFY pool_check")
    assert select.select([idle.fileno()], [], [], 10)[0]  # the notification has arrived
    trace = tmp_path / "trace"
    with _traced(idle, trace):
        connection_alive(idle)  # a notification waiting: the empty query decides, and passes
    assert "Query" in trace.read_text()
    assert idle.execute("SELECT 2").fetchone() == (2,)


def test_a_connection_the_server_ended_is_refused(idle: psycopg.Connection[Any]) -> None:
    _end(idle.info.backend_pid)
    with pytest.raises(psycopg.OperationalError):
        connection_alive(idle)


def test_a_closed_connection_is_refused(idle: psycopg.Connection[Any]) -> None:
    idle.close()
    with pytest.raises(psycopg.OperationalError):
        connection_alive(idle)


@pytest.fixture
def pooled() -> Iterator[DatabaseWrapper]:
    """A Django connection of the web process's kind: this backend with a pool (open, its first connection made). A
    short pool timeout: psycopg_pool's own check waits a second after a failed one, which would be past it."""
    settings_dict = {
        **connection.settings_dict,
        "ENGINE": "config.database",
        "CONN_MAX_AGE": 0,
        "CONN_HEALTH_CHECKS": False,
        "OPTIONS": {**connection.settings_dict["OPTIONS"], "pool": {"min_size": 1, "max_size": 4, "timeout": 0.8}},
    }
    wrapper = DatabaseWrapper(settings_dict, alias="pooled")
    wrapper.pool.open(wait=True)
    try:
        yield wrapper
    finally:
        wrapper.close()
        wrapper.close_pool()


def test_a_pooled_connection_reads_timestamps_with_psycopgs_loader(pooled: DatabaseWrapper) -> None:
    """The web process's connections come from the pool, made from the same parameters (config.database.timestamps)."""
    pooled.connect()
    assert pooled.connection.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT) is UtcTimestamptzLoader
    with pooled.cursor() as cursor:
        cursor.execute("SELECT '2023-05-08 13:57:00.5+02'::timestamptz")
        (read,) = cursor.fetchone()
    assert read == datetime.datetime(2023, 5, 8, 11, 57, 0, 500000, tzinfo=datetime.UTC)
    assert read.tzinfo is datetime.UTC


def _pids_after_borrowing(pooled: DatabaseWrapper, count: int) -> list[int]:
    """Borrows `count` connections at once and gives them back: the pool then holds them idle."""
    others = [DatabaseWrapper(pooled.settings_dict, alias="pooled") for _ in range(count - 1)]
    borrowers = [pooled, *others]
    for borrower in borrowers:
        borrower.connect()
    pids = [borrower.connection.info.backend_pid for borrower in borrowers]
    for borrower in borrowers:
        borrower.close()
    return pids


def test_the_web_process_pool_lends_an_idle_connection_without_a_round_trip(
    pooled: DatabaseWrapper, tmp_path: Path
) -> None:
    pooled.connect()
    borrowed = pooled.connection
    pooled.close()  # back to the pool, idle
    trace = tmp_path / "trace"
    with _traced(borrowed, trace):
        pooled.connect()
        assert pooled.connection is borrowed  # the same connection, lent again
    assert trace.read_text() == ""


def test_after_the_server_ended_every_idle_connection_the_next_borrow_gets_a_live_one(pooled: DatabaseWrapper) -> None:
    ended = _pids_after_borrowing(pooled, 3)
    _end(*ended)
    pooled.connect()  # within the pool's timeout: no wait between dropping one ended connection and the next
    assert pooled.connection.info.backend_pid not in ended
    with pooled.cursor() as cursor:
        cursor.execute("SELECT 3")
        assert cursor.fetchone() == (3,)


@pytest.fixture
def server(transactional_db: None) -> Iterator[AsgiService]:
    with served_on_test_database("connection-pool-server.log", RATE_LIMIT_PER_MINUTE="100000") as service:
        yield service


def test_a_write_after_the_server_ended_every_pooled_connection_is_done_once(server: AsgiService, alice: User) -> None:
    """A write without an eventId is never replayed on a dropped connection (it answers 503 instead,
    tests/memory/test_reconnect.py): it succeeds here only because no ended connection was lent to it."""
    persona = issue(alice, "pool", scopes=Scope.values)
    for n in range(3):  # the pool now holds idle connections
        body = {"key": f"warm-{n}", "value": "x"}
        assert httpx.post(f"{server.url}/memory/save", json=body, headers=persona.headers).status_code == 200
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        )
        others = [pid for (pid,) in cursor.fetchall()]
    assert others
    _end(*others)
    body = {"key": "editor", "value": "helix"}
    response = httpx.post(f"{server.url}/memory/save", json=body, headers=persona.headers)
    assert response.status_code == 200, response.text
    assert Claim.objects.filter(owner=alice, key="editor").count() == 1

"""Transparent reconnect (seeds/004): a read, or a write carrying an eventId, survives one dropped database
connection; a write without one runs once and says the database is unavailable. Only genuine disconnects
count. The connection is really terminated by the server (pg_terminate_backend), not simulated."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from django.db import OperationalError, connection, transaction

import config.urls  # noqa: F401  (every endpoint module imported)
from memory.api.base import endpoint_tools
from memory.connectivity import READ_TOOLS, is_disconnect
from memory.models import Claim
from tests.conftest import Api, Persona, error_code

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_connection_afterwards(transactional_db: None) -> Iterator[None]:
    yield
    connection.close()  # a test may leave its connection dropped; the database teardown needs a live one


def drop_connection() -> None:
    """The server ends this test's (and so the next request's) connection, as a restart or PgBouncer would."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    params = connection.get_connection_params()
    for name in ("cursor_factory", "context"):
        params.pop(name, None)
    with psycopg.connect(**params, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,)).fetchone() == (True,)


def test_a_read_survives_a_dropped_connection(api: Api, owner: Persona) -> None:
    assert api.post("/memory/save", owner, {"key": "editor", "value": "helix"}).status_code == 200
    drop_connection()
    response = api.post("/memory/get", owner, {"key": "editor"})
    assert response.status_code == 200, response.content
    assert "helix" in response.json()["memory"]["value"]  # wrapped as untrusted data on the way out


def test_a_write_with_an_event_id_survives_a_dropped_connection_exactly_once(api: Api, owner: Persona) -> None:
    drop_connection()
    response = api.post("/memory/save", owner, {"key": "editor", "value": "helix", "eventId": "evt-1"})
    assert response.status_code == 200, response.content
    assert Claim.objects.filter(key="editor").count() == 1


def test_a_write_without_an_event_id_is_not_replayed(api: Api, owner: Persona) -> None:
    drop_connection()
    response = api.post("/memory/save", owner, {"key": "editor", "value": "helix"})
    assert response.status_code == 503
    assert error_code(response) == "SERVICE_UNAVAILABLE"
    connection.close()  # the request is over; the next one (here: the check) opens a fresh connection
    assert Claim.objects.filter(key="editor").count() == 0


def test_only_genuine_disconnects_count() -> None:
    drop_connection()
    with pytest.raises(OperationalError) as dropped:
        connection.cursor().execute("SELECT 1")
    assert is_disconnect(dropped.value)
    connection.close()
    with pytest.raises(OperationalError) as cancelled, transaction.atomic():
        connection.cursor().execute("SET LOCAL statement_timeout = '1ms'; SELECT pg_sleep(1)")
    assert not is_disconnect(cancelled.value)  # 57014: the query was cancelled, the connection is fine


def test_every_read_tool_names_a_real_endpoint() -> None:
    tools = set(endpoint_tools())
    assert tools >= READ_TOOLS, sorted(READ_TOOLS - tools)

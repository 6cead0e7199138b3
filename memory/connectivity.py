"""Telling a database that is away from one that said no.

`is_disconnect` recognises a genuine loss of the connection (SQLSTATE class 08, 57P01-57P03, a connection
psycopg already knows is closed, a server that went away mid-query); lock timeouts, too many connections or
a cancelled statement are not disconnects. `is_unavailable` adds the cases where no connection could be had
at all (the pool timed out waiting, the server refuses new connections): a client gets 503
SERVICE_UNAVAILABLE for those, never a 500.

While the database is away every request would wait on the connection pool (3 s) before failing. So the
first failure is remembered (`note_outage`), and from then on `database_reachable` answers from one direct
connection attempt (refused in well under a millisecond while the server is down) instead of the pool, until
such an attempt succeeds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from memory.errors import error_body

logger = logging.getLogger("memory.connectivity")

# Class 08 (connection exception) and 57P0x (the server ended the session: admin or crash shutdown, cannot
# connect now, database dropped, idle-session timeout).
_DISCONNECT_PREFIXES = ("08", "57P0")
_UNAVAILABLE_STATES = {"53300"}  # too many connections: not a disconnect (no retry), but the service is busy
PROBE_TIMEOUT_S = 1

# Calls that may run twice without a second effect, so they are retried once on a dropped connection (seeds/004
# "transparent reconnect"): reads. Writes join them when they carry an eventId (exactly-once); others run once.
READ_TOOLS = frozenset({
    "whoami", "partitions.list", "stats", "coord.health",
    "query.search", "query.reference", "recall", "query.atlas", "query.day", "query.recent_changes", "query.graph",
    "context.bootstrap", "digest",
    "node.list", "node.get", "node.neighborhood", "node.sources",
    "claim.list", "claim.get", "claim.history",
    "source.get", "source.list", "source.processing.get", "artifact.get", "artifact.list",
    "memory.get", "memory.list", "memory.history", "memory.search", "scratchpad.read",
    "session.get", "session.list", "session.events", "handoff.load", "handoff.list",
    "commitments.open", "commitments.list",
    "metrics.list", "metrics.series", "metrics.summary", "metrics.summaries",
})  # fmt: skip

_outage = False


def _driver_error(exc: BaseException) -> BaseException:
    """The psycopg error behind Django's wrapper, or the exception itself."""
    cause = exc.__cause__
    return cause if isinstance(cause, psycopg.Error) else exc


def lost_a_lock_race(exc: BaseException) -> bool:
    """PostgreSQL aborted this transaction to break a deadlock (40P01) or a serialization conflict (40001):
    nothing of it was kept, and running it again is the documented remedy."""
    if not isinstance(exc, (OperationalError, psycopg.OperationalError)):
        return False
    return getattr(_driver_error(exc), "sqlstate", None) in ("40P01", "40001")


def is_disconnect(exc: BaseException) -> bool:
    """The connection is gone (a fresh one may well work): safe to retry a replay-safe request once."""
    if not isinstance(exc, (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)):
        return False
    driver = _driver_error(exc)
    if _is_pool_timeout(driver):
        return False
    sqlstate = getattr(driver, "sqlstate", None)
    if sqlstate:
        return sqlstate.startswith(_DISCONNECT_PREFIXES)
    return True  # without a SQLSTATE psycopg is reporting the connection itself: closed, failed or lost


def is_unavailable(exc: BaseException) -> bool:
    """No usable connection to the database: answer 503, not 500."""
    if not isinstance(exc, (DatabaseError, psycopg.Error)):
        return False
    driver = _driver_error(exc)
    return is_disconnect(exc) or _is_pool_timeout(driver) or getattr(driver, "sqlstate", None) in _UNAVAILABLE_STATES


def replay_safe(tool: str, data: object) -> bool:
    """May this call run again after a dropped connection: a read, or a write with an eventId."""
    return tool in READ_TOOLS or (isinstance(data, dict) and bool(data.get("eventId") or data.get("event_id")))


def reconnect() -> None:
    """Drop this thread's broken connection; the next query opens a fresh one (from the pool, if any)."""
    try:
        connection.close()
    except DatabaseError:
        connection.connection = None


def _is_pool_timeout(exc: BaseException) -> bool:
    from psycopg_pool import PoolTimeout

    return isinstance(exc, PoolTimeout)


def note_outage() -> None:
    global _outage
    if not _outage:
        logger.warning("database.unavailable")
    _outage = True


def outage_noted() -> bool:
    return _outage


def database_reachable() -> bool:
    """True unless an outage was noted and the database still refuses a direct connection."""
    return not _outage or probe()


def probe() -> bool:
    """One direct connection attempt (not through the pool); records the outage, or its end."""
    global _outage
    params = connection.get_connection_params()
    for name in ("cursor_factory", "context", "pool"):
        params.pop(name, None)
    try:
        psycopg.connect(**params, connect_timeout=PROBE_TIMEOUT_S).close()
    except psycopg.Error:
        note_outage()
        return False
    if _outage:
        logger.info("database.reachable")
    _outage = False
    return True


class DatabaseOutageMiddleware:
    """During an outage, answer 503 SERVICE_UNAVAILABLE at once (/healthz reports it in its own shape); a view
    that meets one answers the same."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path != "/healthz" and not database_reachable():
            return unavailable_response()
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if is_unavailable(exception):
            note_outage()
            return unavailable_response()
        return None


UNAVAILABLE_MESSAGE = "The database is unavailable right now."


def unavailable_response() -> JsonResponse:
    response = JsonResponse(error_body("SERVICE_UNAVAILABLE", UNAVAILABLE_MESSAGE), status=503)
    response["Retry-After"] = "5"
    return response

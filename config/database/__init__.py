"""The web process's connection pool hands out only connections the server has not ended.

psycopg_pool's own check sends an empty query before every borrow: a round trip per request, 0.1 ms on an idle
machine and 0.35 ms in a search's place on a busy one (docs/benchmarks.md, issue 18, sixteenth pass). A server that
ends a session (a restart, `pg_terminate_backend`, `idle_session_timeout`) says so and closes the socket, and a
crashed backend's socket is closed by the kernel: either way an idle connection's socket has something to read. So a
socket with nothing to read is alive without asking; one with anything to read (that, or a notification) gets the
round trip.
"""

from __future__ import annotations

import select
from typing import Any

from psycopg_pool import ConnectionPool


def connection_alive(connection: Any) -> None:
    """Returns quietly for a connection fit to lend, raises for one the server has ended (the pool then drops it
    and lends another)."""
    if not connection.closed:
        poller = select.poll()
        poller.register(connection.fileno(), select.POLLIN)
        if not poller.poll(0):
            return
    ConnectionPool.check_connection(connection)  # raises on a closed or ended connection

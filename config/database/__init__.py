"""The web process's connection pool hands out only connections the server has not ended.

psycopg_pool's own check sends an empty query before every borrow: a round trip per request, 0.1 ms on an idle
machine and 0.35 ms in a search's place on a busy one (docs/benchmarks.md, issue 18, sixteenth pass). A server that
ends a session (a restart, `pg_terminate_backend`, `idle_session_timeout`) says so and closes the socket, and a
crashed backend's socket is closed by the kernel: either way the socket has something to read. So a connection given
back moments ago whose socket has nothing to read is alive without asking. One with anything to read (that, or a
notification), or idle longer than QUIET_SECONDS, gets the round trip: a link that died without a word (a failover to
another host, a firewall dropping an idle flow) shows nothing on the socket until something is sent.
"""

from __future__ import annotations

import select
import time
import weakref
from typing import Any

from psycopg_pool import ConnectionPool

QUIET_SECONDS = 5.0
_given_back: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def connection_given_back(connection: Any) -> None:
    """Notes when a connection went back to the pool."""
    _given_back[connection] = time.monotonic()


def connection_alive(connection: Any) -> None:
    """Returns quietly for a connection fit to lend, raises for one the server has ended (the pool then drops it
    and lends another)."""
    quiet = time.monotonic() - _given_back.get(connection, float("-inf")) <= QUIET_SECONDS
    if quiet and not connection.closed:
        poller = select.poll()
        poller.register(connection.fileno(), select.POLLIN)
        if not poller.poll(0):
            return
    ConnectionPool.check_connection(connection)  # raises on a closed or ended connection

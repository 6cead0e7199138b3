"""Django's PostgreSQL backend, with timestamps read by psycopg's C loader (`config.database.timestamps`) and its
connection pool (the web process, DB_POOL) lending only connections the server has not ended, checked by
`config.database.connection_alive` (no round trip for one given back moments ago).

Django would give the pool psycopg_pool's own check, which makes the round trip and, when a check fails, waits
before the next borrow (1 s, then 2 s, ...): after a restart of PostgreSQL, each ended connection still in the
pool cost the first request a second, past the pool's timeout (3 s) at the fourth. Here a failed check has the pool
drop every idle connection the server ended at once (`ConnectionPool.check`, the round trip for each idle one)
before lending another. Its schema editor makes no pattern (`LIKE`) index for a public id (`config.database.schema`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base

from config.database import connection_alive, connection_given_back
from config.database.schema import DatabaseSchemaEditor
from config.database.timestamps import utc_adapters

# Borrows after a failed check before giving up (each after the pool dropped every ended idle connection).
BORROWS = 3


class DatabaseWrapper(base.DatabaseWrapper):
    pool: Any  # Django's (django-stubs do not declare it), as `close_pool`
    close_pool: Callable[[], None]
    SchemaEditorClass = DatabaseSchemaEditor  # no pattern index beside a public id

    def get_connection_params(self) -> dict[str, Any]:
        params: dict[str, Any] = super().get_connection_params()
        if settings.USE_TZ and self.timezone == datetime.UTC:
            params["context"] = utc_adapters(params["context"])
        return params

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection(conn_params)
        if self.pool is None:
            return connection
        borrows = 1
        while True:
            try:
                connection_alive(connection)
                return connection
            except psycopg.Error:
                pool = connection._pool
                pool.putconn(connection)  # closed by the failed check: the pool drops it and opens another
                if borrows == BORROWS:
                    raise
                pool.check()  # the others the server ended with it: dropped now, not one borrow at a time
                connection = super().get_new_connection(conn_params)
                borrows += 1

    def close(self) -> None:
        if self.connection is not None and self.pool is not None:
            connection_given_back(self.connection)
        super().close()

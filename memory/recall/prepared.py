"""The statements every search sends in the same words, prepared once per connection and sent together.

The vector leg's statement and the statements that read the results' rows are the same text call after call, only
their values change. Sent as text with the values written in (Django's client-side binding), PostgreSQL parsed
and analysed each of them anew on every search, and planned the rows' statements anew too. `read_prepared` sends
them on a server-binding cursor with `prepare=True`: each text is parsed once per connection (a pooled connection
keeps its prepared statements for its life). The statements go in one pipeline, read after its end: one round
trip, and one transaction from the first statement to the last, so a `set_config(..., true)` of the first holds
for the rest and ends with them.

Django turns prepared statements off on its connections (`prepare_threshold` None), and this leaves them off
outside `read_prepared`: with them on, psycopg would count every statement Django sends (its text, values
written in: a batch of vectors is half a megabyte) and forget everything prepared at any ROLLBACK.

They still pass through Django's cursor wrapper: execute wrappers see each statement, and the query log (DEBUG,
tests) shows it with its values written in, as it shows the statements bound on the client.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from django.utils.asyncio import async_unsafe

# While a search's statements are sent; any value but None lets psycopg prepare, and they ask for it themselves.
PREPARED_AT = 0
Params = Sequence[Any] | Mapping[str, Any]
Statement = tuple[str, Params]


class _PreparedCursor(psycopg.Cursor[Any]):  # server-side binding, whatever the connection's cursor factory
    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None, **options: Any) -> Any:
        return super().execute(query, params, prepare=True, **options)


class _LoggedCursor(CursorDebugWrapper):
    def execute(self, sql: Any, params: Any = None) -> Any:
        # Django would log the prepared text ($1, $2, ...) or nothing: the statement as it ran, values written in.
        with self.debug_sql(self.db.ops.compose_sql(sql, params), params):
            return CursorWrapper.execute(self, sql, params)


_SETTING = re.compile(r"[a-z_]+(\.[a-z_]+)?")


@async_unsafe
def read_prepared(statements: list[Statement], *, settings: dict[str, str] | None = None) -> list[list[dict[str, Any]]]:
    """Each statement's rows (as dicts by column name), in order, in one round trip on this thread's connection.

    `settings` (plan_cache_mode, hnsw.ef_search, ...) hold for these statements alone: set by the pipeline's first
    statement, local to its transaction. In autocommit they end with the statements, never leaking into a pooled
    connection; inside transaction.atomic (tests; no caller in the service) they hold until that ends: each
    read_prepared sets what its own statements want, and the others' plans may change (`enable_seqscan`), never
    what they return."""
    if settings:
        calls: list[str] = []
        values: dict[str, str] = {}
        for n, (name, value) in enumerate(settings.items()):
            if not _SETTING.fullmatch(name):
                raise ValueError(f"not a setting's name: {name!r}")
            calls.append(f"set_config('{name}', %(value{n})s, true)")  # the name written in: logs read as they ran
            values[f"value{n}"] = value
        return read_prepared([(f"SELECT {', '.join(calls)}", values), *statements])[1:]
    connection.close_if_health_check_failed()  # as connection.cursor() does, before the pipeline
    connection.ensure_connection()
    connection.validate_thread_sharing()  # as connection.cursor() does; each execute checks the transaction
    raw = connection.connection
    wrap = _LoggedCursor if connection.queries_logged else CursorWrapper
    cursors = [wrap(_PreparedCursor(raw), connection) for _ in statements]
    threshold, raw.prepare_threshold = raw.prepare_threshold, PREPARED_AT
    try:
        with connection.wrap_database_errors:
            with raw.pipeline():
                for cursor, (sql, params) in zip(cursors, statements, strict=True):
                    cursor.execute(sql, params)
            # Read once the pipeline has ended: its end sends the statements and waits for every result at once
            # (a read inside it would be a round trip of its own, before the one that ends it).
            found = []
            for cursor in cursors:
                rows = cursor.fetchall()
                names = [column.name for column in cursor.description]
                found.append([dict(zip(names, row, strict=True)) for row in rows])
    finally:
        raw.prepare_threshold = threshold
        for cursor in cursors:
            cursor.close()
    return found

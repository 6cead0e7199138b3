"""The round trips a piece of code makes to PostgreSQL, as the statements it sends grouped by round trip:
statements sent together in one psycopg pipeline (memory.recall.prepared) are one round trip, any other
statement one of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection


def round_trips(run: Callable[[], Any]) -> list[list[str]]:
    trips: list[list[str]] = []
    current: list[Any] = [None]  # the pipeline of the last statement (kept, so a new one never shares its id)

    def watch(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        pipeline = connection.connection._pipeline  # psycopg's pipeline in progress on the connection, if any
        if pipeline is None or pipeline is not current[0]:
            trips.append([])
        current[0] = pipeline
        trips[-1].append(sql)
        return execute(sql, *args)

    with connection.execute_wrapper(watch):
        run()
    return trips

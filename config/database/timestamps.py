"""Timestamps read by psycopg's own loader.

Django reads every `timestamptz` through its own subclass of psycopg's pure-Python loader
(`django.db.backends.postgresql.psycopg_any.BaseTzLoader`): the text parsed in Python, then the connection's time
zone set on the result. That is 2.3 us a value against 0.12 for psycopg's C loader (a search's rows hold ~60 of them;
an ORM read of 440 sources' four times: 4.8 -> 0.7 ms; docs/benchmarks.md, issue 18, nineteenth pass). Where the
connection's time zone is UTC (USE_TZ, and no TIME_ZONE for the database: Django then keeps every session's TimeZone at
UTC), psycopg's loader gives the same values with the same tzinfo (`datetime.UTC`), so `UtcTimestamptzLoader` hands
each value to it.

Django compares the `timezone` of the loader registered on a connection with its own before every cursor, and the C
loader cannot carry one (nor be subclassed): this class carries it, and takes the C loader's bound `load` as its own
for each instance, so no Python frame runs per value. Its tzinfo is the session's: a session set to another zone
(nothing here sets one) would read the right instants in that zone, where Django's loader would have moved them.
"""

from __future__ import annotations

import datetime
from functools import cache
from typing import Any

import psycopg
from psycopg import abc
from psycopg.adapt import AdaptersMap, Loader
from psycopg.pq import Format

TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid


def _psycopg_loader() -> type[abc.Loader]:
    """psycopg's own text loader: its C one where psycopg's binary package is installed (requirements/base.txt)."""
    found = psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
    if found is None:  # psycopg registers one for every built-in type
        raise ImportError("psycopg has no loader for timestamptz")
    return found


PSYCOPG_LOADER = _psycopg_loader()


class UtcTimestamptzLoader(Loader):
    timezone = datetime.UTC  # what Django compares with the connection's before each cursor

    def __init__(self, oid: int, context: abc.AdaptContext | None = None) -> None:
        super().__init__(oid, context)
        # Its tzinfo comes from the session's TimeZone, which Django keeps at UTC for such a connection.
        self.load = PSYCOPG_LOADER(oid, context).load  # type: ignore[method-assign]

    def load(self, data: abc.Buffer) -> Any:  # replaced on each instance (declared for the abstract base)
        raise NotImplementedError


@cache
def utc_adapters(template: AdaptersMap) -> AdaptersMap:
    """Django's adapters (`template`, one per time zone setting) with timestamps read by psycopg's loader."""
    adapters = AdaptersMap(template)
    adapters.register_loader(TIMESTAMPTZ_OID, UtcTimestamptzLoader)
    return adapters

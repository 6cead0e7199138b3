"""Timestamps are read by psycopg's own loader and come back as Django's loader gives them (config.database)."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader
from psycopg.pq import Format

from config.database import timestamps
from config.database.timestamps import TIMESTAMPTZ_OID, UtcTimestamptzLoader
from memory.models import User
from memory.recall.prepared import read_prepared

pytestmark = pytest.mark.django_db

WRITTEN = [
    "2023-05-08 13:57:00.123456+00",
    "1999-12-31 23:59:59.5+05:30",  # another offset: the session answers in UTC
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999999+00",
]
SELECTED = (
    "SELECT "
    + ", ".join(f"'{text}'::timestamptz" for text in WRITTEN)
    + ", ARRAY['2023-05-08 13:57:00+00'::timestamptz, NULL], NULL::timestamptz"
)


def test_the_loader_lent_is_psycopgs_c_one() -> None:
    """Without psycopg's binary package (or with PSYCOPG_IMPL=python) this class would lend the pure-Python loader:
    the same values, none of the speed."""
    assert timestamps.PSYCOPG_LOADER.__module__ == "psycopg_binary._psycopg"


def test_the_connection_and_every_cursor_django_makes_read_timestamps_with_psycopgs_loader() -> None:
    connection.ensure_connection()

    assert connection.connection.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT) is UtcTimestamptzLoader
    with connection.cursor() as cursor:  # Django would register its own here if the time zones disagreed
        assert cursor.cursor.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT) is UtcTimestamptzLoader
        cursor.execute("SELECT %s::timestamptz", ["2023-05-08 13:57:00+00"])
        (read,) = cursor.fetchone()
    assert type(read).__module__ == "datetime"


def test_values_and_their_time_zone_are_the_ones_djangos_loader_gives() -> None:
    with connection.cursor() as cursor:
        cursor.execute(SELECTED)
        ours = cursor.fetchone()
    with connection.cursor() as cursor:
        register_tzloader(datetime.UTC, cursor.cursor)  # Django's own loader, on this cursor only
        cursor.execute(SELECTED)
        djangos = cursor.fetchone()

    assert ours == djangos
    assert ours[0] == datetime.datetime(2023, 5, 8, 13, 57, 0, 123456, tzinfo=datetime.UTC)
    assert ours[1] == datetime.datetime(1999, 12, 31, 18, 29, 59, 500000, tzinfo=datetime.UTC)
    assert ours[-2] == [datetime.datetime(2023, 5, 8, 13, 57, tzinfo=datetime.UTC), None]  # an array's elements too
    assert ours[-1] is None
    assert all(value.tzinfo is datetime.UTC for value in ours[: len(WRITTEN)])
    assert [value.tzinfo for value in ours[: len(WRITTEN)]] == [value.tzinfo for value in djangos[: len(WRITTEN)]]


def test_prepared_statements_and_the_orm_read_the_same_aware_times() -> None:
    joined = datetime.datetime(2024, 2, 29, 23, 59, 58, 765432, tzinfo=datetime.UTC)
    user = User.objects.create(username="timestamps", date_joined=joined)

    (rows,) = read_prepared([("SELECT date_joined FROM memory_user WHERE id = %(id)s", {"id": user.pk})])
    assert rows == [{"date_joined": joined}]
    assert rows[0]["date_joined"].tzinfo is datetime.UTC
    again = User.objects.get(pk=user.pk).date_joined
    assert again == joined and again.tzinfo is datetime.UTC
    # A named (server-side) cursor goes through Django's create_cursor as well.
    streamed = list(User.objects.filter(pk=user.pk).values_list("date_joined", flat=True).iterator(chunk_size=10))
    assert streamed == [joined] and streamed[0].tzinfo is datetime.UTC

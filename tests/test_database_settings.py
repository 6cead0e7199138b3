"""The embedded PostgreSQL runs with the settings config.embedded gives it (issue 18's footprint and latency)."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("io_method", "worker"),  # reads of uncached pages go out in parallel: a million claims searched fast
        ("jit", "off"),  # a search never spends milliseconds compiling a query
        ("shared_buffers", "1GB"),  # the HNSW index of 100,000 claims stays in memory
        ("wal_buffers", "4MB"),  # not 1/32 of the shared buffers: 16 MB every process writing WAL touches
    ],
)
def test_the_embedded_database_runs_with_its_settings(name: str, value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        assert cursor.fetchone()[0] == value

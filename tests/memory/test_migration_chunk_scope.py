"""Chunks written before migration 0027 get their source's scope and time from it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("memory", "0026_chunk_partition_speaker")]
AFTER = [("memory", "0027_chunk_scope_occurred_at")]


@pytest.fixture
def before_0027() -> Iterator[MigrationExecutor]:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        yield executor
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes("memory"))


def test_chunks_written_before_get_their_sources_scope_and_time(before_0027: MigrationExecutor) -> None:
    apps = before_0027.loader.project_state(BEFORE).apps
    user = apps.get_model("memory", "User").objects.create(username="before")
    partition = apps.get_model("memory", "Partition").objects.create(owner=user, key="memory:personal", label="P")
    Source = apps.get_model("memory", "Source")
    Chunk = apps.get_model("memory", "Chunk")
    occurred = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    said = datetime(2024, 3, 2, 18, 30, tzinfo=UTC)
    book = Source.objects.create(
        id="src_book", owner=user, partition=partition, kind="document", external_id="book", scope="reference",
        occurred_at=occurred,
    )  # fmt: skip
    turn = Source.objects.create(
        id="src_turn", owner=user, partition=partition, kind="message", external_id="chat/1", occurred_at=occurred
    )
    for pk, source, authored in (("chk_book", book, None), ("chk_turn", turn, said)):
        Chunk.objects.create(
            id=pk, owner=user, partition=partition, source=source, ordinal=0, text="x", char_start=0, char_end=1,
            authored_at=authored,
        )  # fmt: skip

    before_0027.loader.build_graph()
    before_0027.migrate(AFTER)

    with connection.cursor() as cursor:
        cursor.execute("SELECT id, scope, occurred_at FROM memory_chunk ORDER BY id")
        assert cursor.fetchall() == [("chk_book", "reference", occurred), ("chk_turn", "personal", said)]

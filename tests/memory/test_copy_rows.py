"""New rows sent with one COPY (memory.models.copy_rows) store exactly what bulk_create stores, fail as it fails
(Django's IntegrityError, nothing half-written), and count as one statement."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from django.db import IntegrityError, connection, transaction
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext

from memory.models import Chunk, Partition, Source, SourceKind, User
from memory.models.copy_rows import copy_rows, vector_text
from tests.factories import PartitionFactory, UserFactory

pytestmark = pytest.mark.django_db

AWKWARD = "tab\there, a new\nline, a back\\slash, \\N, 'quotes' \"too\", émoji 🙂, \r and the end"


def messages(owner: User, partition: Partition, conversation: Source, prefix: str) -> list[Source]:
    return [
        Source(
            owner=owner, partition=partition, kind=SourceKind.MESSAGE, external_id=f"{prefix}/m{n}",
            parent=conversation, ordinal=n, content=f"{AWKWARD} {n}", content_hash="h" * 64, role="user", speaker="Ana",
            message_id=f"m{n}", thread_id=prefix, authored_at=datetime(2026, 4, 26, 13, n, tzinfo=UTC) if n else None,
            occurred_at=datetime(2026, 4, 26, 13, n, tzinfo=UTC), source_context={"app": "chat", "nested": [1, None]},
            participants=["Ana", "Bo"],
        )
        for n in range(3)
    ]  # fmt: skip


def stored(rows: list[Any], *, leave_out: set[str]) -> list[dict[str, Any]]:
    return [
        {key: value for key, value in model_to_dict(row).items() if key not in leave_out}
        for row in type(rows[0]).objects.filter(pk__in=[row.pk for row in rows]).order_by("ordinal")
    ]


@pytest.fixture
def conversation() -> Source:
    owner = UserFactory.create()
    return Source.objects.create(
        owner=owner, partition=PartitionFactory.create(owner=owner), kind=SourceKind.CONVERSATION, external_id="c",
        occurred_at=datetime(2026, 4, 26, 13, tzinfo=UTC),
    )  # fmt: skip


def test_copied_rows_store_what_bulk_create_stores(conversation: Source) -> None:
    copied = messages(conversation.owner, conversation.partition, conversation, "copied")
    created = messages(conversation.owner, conversation.partition, conversation, "created")
    copy_rows(Source, copied)
    Source.objects.bulk_create(created)

    leave_out = {"id", "external_id", "thread_id", "created_at"}  # the statement's time
    assert stored(copied, leave_out=leave_out) == stored(created, leave_out=leave_out)
    assert [row.content for row in Source.objects.filter(pk__in=[c.pk for c in copied]).order_by("ordinal")] == [
        f"{AWKWARD} {n}" for n in range(3)
    ]
    assert all(row.pk.startswith("src_") and not row._state.adding for row in copied)  # ids made in Python
    assert Source.objects.filter(pk__in=[c.pk for c in copied], created_at__isnull=False).count() == 3  # db default


def test_copied_chunks_keep_their_vectors_and_get_their_generated_search_text(conversation: Source) -> None:
    vector = [0.5, -0.25] + [0.0] * 382
    chunks = [
        Chunk.of(
            conversation, ordinal=n, text=f"The garden needs water {n}", char_start=0, char_end=24,
            embedding=vector if n else None, embedding_model="minilm" if n else "",
        )
        for n in range(2)
    ]  # fmt: skip
    copy_rows(Chunk, chunks)

    rows = list(Chunk.objects.filter(source=conversation).order_by("ordinal"))
    assert rows[0].embedding is None
    assert list(rows[1].embedding) == vector
    assert Chunk.objects.filter(source=conversation, search_vector="garden").count() == 2


def test_a_copied_vector_reads_back_as_the_float32_values_it_was_made_of(conversation: Source) -> None:
    """The copy writes nine significant digits (vector_text): enough for every float32, which pgvector stores."""
    made = np.random.default_rng(7).standard_normal(384).astype(np.float32)
    made[:4] = [1e-38, -3.4028235e38, 0.1, 1 / 3]  # tiny, huge, and values with no short decimal form
    chunk = Chunk.of(
        conversation, ordinal=0, text="x", char_start=0, char_end=1, embedding=made.tolist(), embedding_model="minilm"
    )
    copy_rows(Chunk, [chunk])
    assert np.array_equal(np.asarray(Chunk.objects.get(pk=chunk.pk).embedding, dtype=np.float32), made)
    assert vector_text([0.5, -0.25, 1e-07]) == "[0.5,-0.25,1e-07]"


def test_a_row_that_breaks_a_constraint_raises_djangos_integrity_error_and_writes_nothing(conversation: Source) -> None:
    rows = messages(conversation.owner, conversation.partition, conversation, "same")
    rows[2].external_id = rows[0].external_id  # the live identity is unique

    with pytest.raises(IntegrityError), transaction.atomic():
        copy_rows(Source, rows)

    assert not Source.objects.filter(kind=SourceKind.MESSAGE).exists()


def test_the_copy_is_one_statement_to_query_counters_and_the_query_log(conversation: Source) -> None:
    seen: list[str] = []

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as logged, connection.execute_wrapper(count):
        copy_rows(Source, messages(conversation.owner, conversation.partition, conversation, "counted"))

    assert len(seen) == 1 and seen[0].startswith('COPY "memory_source" (')
    assert [query["sql"].split(" (")[0] for query in logged.captured_queries] == ['COPY "memory_source"']


def test_nothing_to_copy_sends_nothing() -> None:
    with CaptureQueriesContext(connection) as logged:
        copy_rows(Source, [])
    assert logged.captured_queries == []


def test_a_model_whose_key_the_database_makes_is_refused() -> None:
    with pytest.raises(TypeError, match="needs values from the database"):
        copy_rows(User, [User(username="x")])


def test_a_field_left_to_its_database_default_in_some_rows_only_is_refused(conversation: Source) -> None:
    rows = messages(conversation.owner, conversation.partition, conversation, "mixed")
    rows[1].created_at = datetime(2026, 1, 1, tzinfo=UTC)

    with pytest.raises(ValueError, match="created_at: set in some rows"):
        copy_rows(Source, rows)

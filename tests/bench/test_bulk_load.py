"""bench/bulk_load.py: rows written with COPY read back exactly as the ORM's bulk_create writes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db.models import Model

from bench.bulk_load import copy_insert
from memory.ids import new_id
from memory.models import Claim, Evidence, Node, Partition, Source, User

# Set by the clock when written (auto_now, db_default Now()): they differ between any two writes.
CLOCK_COLUMNS = {"updated_at", "created_at"}


def rows(model: type[Model], ids: list[Any]) -> list[dict[str, Any]]:
    found = model.objects.filter(pk__in=ids).order_by("pk").values()  # type: ignore[attr-defined]
    return [{name: value for name, value in row.items() if name not in CLOCK_COLUMNS} for row in found]


def vectors(ids: list[str]) -> list[list[float] | None]:
    found = Claim.objects.filter(pk__in=ids).order_by("pk").values_list("embedding", flat=True)
    return [None if vector is None else [float(value) for value in vector] for vector in found]


def claims_and_evidence(alice: User) -> tuple[list[Claim], list[Evidence], Source]:
    """Claims using every kind of column the bench store fills (vector, JSON, dates, nulls), and their evidence."""
    partition = Partition.objects.get(owner=alice, key="memory:personal")
    node = Node.objects.create(id=new_id("node"), owner=alice, partition=partition, type="Person", label="Priya")
    stated = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
    source = Source.objects.create(id=new_id("src"), owner=alice, partition=partition, kind="conversation",
                                   external_id="chat-1", title="Chat 1", occurred_at=stated)  # fmt: skip
    claims = [
        Claim(
            id=new_id("claim"), owner=alice, partition=partition, statement=f"Priya moved to Porto, take {n}.",
            kind="fact", subject=node if n % 2 else None, stated_at=stated + timedelta(days=n),
            recorded_at=stated + timedelta(days=n, minutes=7), status="superseded" if n == 3 else "active",
            importance=1 + n % 5, pinned=n == 2, origin="assistant_inferred" if n % 3 else "user_stated",
            extractor="bench@1", confidence=0.5 + n / 20, value={"n": n, "tags": ["a", "b"]} if n % 2 else None,
            embedding=None if n == 4 else [((n * 7 + d) % 11 - 5) / 10 for d in range(384)],
            embedding_model="" if n == 4 else "minilm-l6-v2-int8",
        )
        for n in range(6)
    ]  # fmt: skip
    evidence = [
        Evidence(owner=alice, claim_id=claim.pk, source=source, excerpt=claim.statement, message_id=f"m{n}",
                 authored_at=claim.stated_at)
        for n, claim in enumerate(claims)
    ]  # fmt: skip
    return claims, evidence, source


@pytest.mark.django_db
def test_copy_insert_writes_the_rows_bulk_create_writes(alice: User) -> None:
    claims, evidence, _ = claims_and_evidence(alice)
    ids = [claim.pk for claim in claims]
    Claim.objects.bulk_create(claims)
    Evidence.objects.bulk_create(evidence)
    by_orm = rows(Claim, ids), vectors(ids), rows_of_evidence(ids)
    Claim.objects.filter(pk__in=ids).delete()  # and their evidence (cascade)

    copy_insert(Claim, claims)
    copy_insert(Evidence, evidence)

    assert rows(Claim, ids) == by_orm[0]
    assert vectors(ids) == by_orm[1]
    assert rows_of_evidence(ids) == by_orm[2]
    assert Claim.objects.filter(pk__in=ids, search_vector="porto").count() == len(ids)  # generated column filled


@pytest.mark.django_db
def test_copy_insert_lets_the_database_fill_its_defaults(alice: User) -> None:
    claims, evidence, _ = claims_and_evidence(alice)
    copy_insert(Claim, claims)

    copy_insert(Evidence, evidence)

    written = list(Evidence.objects.filter(claim_id__in=[c.pk for c in claims]).values_list("id", "created_at"))
    assert len(written) == len(evidence)
    assert all(pk is not None and created is not None for pk, created in written)
    assert len({pk for pk, _ in written}) == len(written)


def rows_of_evidence(claim_ids: list[str]) -> list[dict[str, Any]]:
    found = Evidence.objects.filter(claim_id__in=claim_ids).order_by("claim_id").values()
    return [{k: v for k, v in row.items() if k not in CLOCK_COLUMNS | {"id"}} for row in found]

"""The tables' indexes as PostgreSQL has them after every migration: none that nothing can read (a pattern index
on a public id, a foreign key's own index where a composite index leads with the key), and none missing where a
delete needs one (every foreign key leads some index, so removing a row never scans the tables that point at it).
And migrations 0037 / metrics 0002 can be unapplied: the indexes come back (memory/index_ops.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Field, Model

from memory.index_ops import holds_public_id

pytestmark = pytest.mark.django_db

APPS = ("memory", "metrics")
LEAN = [("memory", "0037_lean_indexes"), ("metrics", "0002_lean_indexes")]
BEFORE_LEAN = [("memory", "0036_memoryevent_owner_action"), ("metrics", "0001_metrics")]

INDEXES = """
    SELECT t.relname, i.relname, array_agg(a.attname ORDER BY k.ord), array_agg(opc.opcname ORDER BY k.ord),
           x.indisunique, x.indpred IS NOT NULL, am.amname
      FROM pg_index x
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_am am ON am.oid = i.relam
      CROSS JOIN LATERAL unnest(x.indkey, x.indclass) WITH ORDINALITY AS k(attnum, opclass, ord)
      LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
      JOIN pg_opclass opc ON opc.oid = k.opclass
     WHERE t.relname = ANY(%s)
     GROUP BY t.relname, i.relname, x.indisunique, x.indpred, am.amname
"""


def _tables() -> dict[str, type[Model]]:
    models = [model for label in APPS for model in apps.get_app_config(label).get_models(include_auto_created=True)]
    return {model._meta.db_table: model for model in models}


def _indexes() -> list[tuple[str, str, list[str | None], list[str], bool, bool, str]]:
    with connection.cursor() as cursor:
        cursor.execute(INDEXES, [list(_tables())])
        return cursor.fetchall()


def _column_field(table: str, column: str | None) -> Field[Any, Any] | None:
    fields = {field.column: field for field in _tables()[table]._meta.local_concrete_fields}
    return fields.get(column or "")


def test_no_public_id_column_has_a_pattern_index() -> None:
    pattern = [
        (table, name)
        for table, name, columns, opclasses, *_ in _indexes()
        if any(opclass.endswith("_pattern_ops") for opclass in opclasses)
        and (field := _column_field(table, columns[0])) is not None  # an expression, or a column of no field
        and holds_public_id(field)
    ]
    assert pattern == []


def test_no_index_is_the_leading_column_of_another_btree_index() -> None:
    rows = [row for row in _indexes() if not _tables()[row[0]]._meta.auto_created]  # Django's many-to-many tables
    leading = {(table, columns[0], opclasses[0]) for table, _, columns, opclasses, _, partial, am in rows
               if len(columns) > 1 and not partial and am == "btree"}  # fmt: skip
    redundant = [
        (table, name)
        for table, name, columns, opclasses, unique, partial, am in rows
        if len(columns) == 1 and not unique and not partial and am == "btree"
        and (table, columns[0], opclasses[0]) in leading
    ]  # fmt: skip
    assert redundant == []


def test_every_foreign_key_leads_an_index() -> None:
    led = {(table, columns[0]) for table, _, columns, _, _, partial, am in _indexes() if not partial and am == "btree"}
    keys = [
        (table, field.column)
        for table, model in _tables().items()
        for field in model._meta.local_concrete_fields
        if field.is_relation
    ]
    assert len(keys) > 50
    assert [key for key in keys if key not in led] == []


@pytest.fixture
def unapplied() -> Iterator[MigrationExecutor]:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_LEAN)
    try:
        yield executor
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate([executor.loader.graph.leaf_nodes(label)[0] for label in APPS])


@pytest.mark.django_db(transaction=True)
def test_the_lean_migrations_unapply_and_apply_again(unapplied: MigrationExecutor) -> None:
    names = {name for _, name, *_ in _indexes()}
    assert {"memory_claim_id_4c8ed578_like", "memory_memoryevent_partition_id_fe8eea76"} <= names
    assert {"memory_evidence_claim_id_79ce1f58", "metrics_observation_definition_id_5031c2c8"} <= names

    unapplied.loader.build_graph()
    unapplied.migrate(LEAN)

    dropped = names - {name for _, name, *_ in _indexes()}
    assert len(dropped) == 75  # 53 pattern indexes of public ids, 22 foreign keys' own
    assert {"memory_claim_id_4c8ed578_like", "memory_evidence_claim_id_79ce1f58"} <= dropped

"""New rows of one model sent with one COPY: a `bulk_create` without its per-row SQL.

`bulk_create` compiles one INSERT with a placeholder for every field of every row, and psycopg parses that long
statement again on every call (its cache keeps only short ones). For the 25 turns of a conversation this was the
largest part of the accept path's own work; COPY sends the same values as data (docs/benchmarks.md, issue 18,
tenth pass).

Unlike `bulk_create`, it reads nothing back: every primary key must come from Python (`PublicIdField` makes
its id as the row is prepared), and a field left to its database default (`db_default`, such as `created_at`)
must be left to it in every row and stays unread on the objects. Like `bulk_create`, it calls no `save()` and
sends no signals. It runs through the connection's execute wrappers and into its query log
(CaptureQueriesContext), as one statement.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from django.db import connection, models
from django.db.models.expressions import DatabaseDefault
from django.db.models.fields import NOT_PROVIDED
from pgvector.django import VectorField


def copy_rows(model: type[models.Model], objects: Sequence[models.Model]) -> None:
    """Insert the (unsaved) objects, in order, in one COPY; database errors arrive as Django's (IntegrityError...)."""
    if not objects:
        return
    fields = _copied_fields(model, objects)
    quote = connection.ops.quote_name
    sql = f"COPY {quote(model._meta.db_table)} ({', '.join(quote(field.column) for field in fields)}) FROM STDIN"
    rows = [[_copied_value(field, obj) for field in fields] for obj in objects]

    def copy(sql: str, params: Any, many: bool, context: dict[str, Any]) -> None:
        with context["cursor"].cursor.copy(sql) as stream:
            for row in rows:
                stream.write_row(row)

    started = time.monotonic()
    with connection.cursor() as cursor, connection.wrap_database_errors:
        run = copy
        for wrapper in reversed(connection.execute_wrappers):
            run = partial(wrapper, run)
        run(sql, None, False, {"connection": connection, "cursor": cursor})
    if connection.queries_logged:  # as Django's debug cursor logs a statement (CaptureQueriesContext, DEBUG)
        connection.queries_log.append(
            {"sql": f"{sql} -- {len(rows)} rows", "time": f"{time.monotonic() - started:.3f}"}
        )
    for obj in objects:  # saved, as bulk_create leaves them
        obj._state.adding, obj._state.db = False, connection.alias


def vector_text(values: Sequence[float]) -> str:
    """A vector in pgvector's text form with nine significant digits, which give back every float32 (what pgvector
    stores) exactly: ~0.1 ms for 384 values against ~0.25 for pgvector's own `str()` of each (a LoCoMo job's chunks:
    ~3 ms less; docs/benchmarks.md, issue 18, twelfth pass)."""
    return "[" + ",".join([format(value, ".9g") for value in values]) + "]"


def _copied_value(field: models.Field[Any, Any], obj: models.Model) -> Any:
    value = field.pre_save(obj, True)
    if isinstance(field, VectorField) and isinstance(value, list):
        return vector_text(value)
    return field.get_db_prep_save(value, connection)


def _copied_fields(model: type[models.Model], objects: Sequence[models.Model]) -> list[models.Field[Any, Any]]:
    meta = model._meta
    if meta.parents or meta.pk is None or getattr(meta.pk, "db_returning", True):  # AutoField: the database's
        raise TypeError(f"{meta.label} needs values from the database on insert; use bulk_create")
    fields = []
    for field in meta.concrete_fields:
        if field.generated:
            continue
        if field.db_default is not NOT_PROVIDED:  # only such a field can hold a DatabaseDefault
            left_to_database = {isinstance(getattr(obj, field.attname), DatabaseDefault) for obj in objects}
            if left_to_database == {True, False}:
                raise ValueError(f"{meta.label}.{field.name}: set in some rows and left to the database in others")
            if left_to_database == {True}:
                continue
        fields.append(field)
    return fields

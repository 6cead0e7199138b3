"""Loading benchmark stores fast: model instances written with PostgreSQL COPY instead of INSERT statements.

Not a benchmark: bench/search_latency.py's build() (and through it scale.py and request_overhead.py) writes its
100,000 claims and their evidence with it. bulk_create sends batches of multi-row INSERTs whose parameters Django
prepares one by one (116 s for 100k claims + evidence on 2 cores); COPY streams the same values (a few times
faster). Each value goes through the field's own pre_save and get_db_prep_save, as bulk_create does, so a row
reads back the same either way (tests/bench/test_bulk_load.py); generated columns and database defaults
(db_default, an unset auto id) are left to the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import Field, Model
from django.db.models.expressions import DatabaseDefault


def copy_insert(model: type[Model], objects: Sequence[Model]) -> None:
    """Write `objects` (unsaved instances of `model`) in one COPY. Like bulk_create, no signals and no save()."""
    if not objects:
        return
    columns = [field for field in model._meta.concrete_fields if not field.generated and _given(field, objects)]
    quote = connection.ops.quote_name
    names = ", ".join(quote(field.column) for field in columns)
    with connection.cursor() as cursor, cursor.copy(f"COPY {quote(model._meta.db_table)} ({names}) FROM STDIN") as copy:
        for instance in objects:
            copy.write_row([field.get_db_prep_save(field.pre_save(instance, True), connection) for field in columns])


def _given(field: Field[Any, Any], objects: Sequence[Model]) -> bool:
    """Whether the column is written: not when every instance leaves it to the database (db_default, an auto id
    not yet assigned). A mix cannot be written in one COPY, so it is refused rather than half-defaulted."""
    left = [_left_to_database(field, instance) for instance in objects]
    if any(left) and not all(left):
        raise ValueError(f"{field.model.__name__}.{field.name}: set on some instances and not on others")
    return not left[0]


def _left_to_database(field: Field[Any, Any], instance: Model) -> bool:
    value = getattr(instance, field.attname)
    return isinstance(value, DatabaseDefault) or (value is None and field is instance._meta.pk)

"""Migration operations that drop the indexes Django makes but nothing reads, without blocking writes
(docs/architecture.md, "Indexes that are written but never read").

On PostgreSQL Django gives every foreign key an index of its own, and every indexed `varchar` column (each public
id, and each foreign key to one) a second, `varchar_pattern_ops` index (`…_like`) that only a `LIKE 'prefix%'`
can use. Public ids are only ever compared whole, and a foreign key that leads a composite index of its table is
found through that index, so both are pure write cost: at a million claims the 75 of them held 470 MB, and every
new claim wrote 9 more index entries than its reads need. New tables get no such pattern index
(`config.database.schema`); these operations drop the ones databases made before.

Both operations drop CONCURRENTLY (a migration using them sets `atomic = False`) and build the same indexes
back, CONCURRENTLY, when unapplied (first dropping what an interrupted build left invalid). Their names are
Django's own (`_create_index_name`), so a database built by these migrations is the one they act on; a missing
index is skipped.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.migrations.operations.base import Operation

from memory.ids import PublicIdField


def holds_public_id(field: models.Field[Any, Any]) -> bool:
    """A column holding a public id: a `PublicIdField` primary key, or a foreign key to one."""
    if isinstance(field, PublicIdField):
        return True
    target = getattr(field, "target_field", None)
    return bool(field.is_relation and field.concrete and isinstance(target, PublicIdField))


def _name(schema_editor: Any, model: type[models.Model], field: models.Field[Any, Any], suffix: str = "") -> str:
    """The name Django gives the index of `field` (`suffix` "_like" for its pattern index)."""
    return str(schema_editor._create_index_name(model._meta.db_table, [field.column], suffix=suffix))


def _drop(schema_editor: Any, name: str) -> None:
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {schema_editor.quote_name(name)}")


def _create(schema_editor: Any, model: type[models.Model], field: models.Field[Any, Any], suffix: str = "") -> None:
    name = _name(schema_editor, model, field, suffix)
    _drop(schema_editor, name)  # an interrupted build leaves an invalid index of that name behind
    opclasses = ["varchar_pattern_ops"] if suffix == "_like" else []
    schema_editor.execute(
        schema_editor._create_index_sql(model, fields=[field], name=name, opclasses=opclasses, concurrently=True)
    )


class DropIdPatternIndexes(Operation):
    """Drop the `…_like` index of every column of this app's tables that holds a public id."""

    reversible = True
    reduces_to_sql = True  # SQL alone: sqlmigrate shows it

    def __init__(self, app_label: str) -> None:
        self.app_label = app_label

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return self.__class__.__qualname__, [], {"app_label": self.app_label}

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass  # Django's state has no `_like` indexes: they are made by the schema editor alone

    def _id_columns(self, apps: Any) -> list[tuple[type[models.Model], models.Field[Any, Any]]]:
        config = apps.get_app_config(self.app_label)
        return [
            (model, field)
            for model in config.get_models(include_auto_created=True)
            for field in model._meta.local_concrete_fields
            if holds_public_id(field)
        ]

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        for model, field in self._id_columns(to_state.apps):
            _drop(schema_editor, _name(schema_editor, model, field, "_like"))

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        for model, field in self._id_columns(to_state.apps):
            # The columns Django gives a `_like` index: those it indexes.
            if field.primary_key or field.unique or getattr(field, "db_index", False):
                _create(schema_editor, model, field, "_like")

    def describe(self) -> str:
        return f"Drop the pattern (LIKE) indexes of {self.app_label}'s public-id columns"


class DropForeignKeyIndexes(Operation):
    """Drop the index Django made for each named foreign key (and its `…_like` twin), for keys that now lead a
    composite index; used with a state-only AlterField to `db_index=False` (SeparateDatabaseAndState)."""

    reversible = True
    reduces_to_sql = True  # SQL alone: sqlmigrate shows it

    def __init__(self, fields: list[tuple[str, str]]) -> None:
        self.fields = fields  # (model name, field name)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return self.__class__.__qualname__, [], {"fields": self.fields}

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass

    def _columns(self, app_label: str, state: Any) -> list[tuple[type[models.Model], models.Field[Any, Any]]]:
        columns = []
        for model_name, field_name in self.fields:
            model = state.apps.get_model(app_label, model_name)
            columns.append((model, model._meta.get_field(field_name)))
        return columns

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        for model, field in self._columns(app_label, from_state):
            _drop(schema_editor, _name(schema_editor, model, field))
            _drop(schema_editor, _name(schema_editor, model, field, "_like"))

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        for model, field in self._columns(app_label, to_state):
            _create(schema_editor, model, field)
            if holds_public_id(field):
                _create(schema_editor, model, field, "_like")

    def describe(self) -> str:
        return f"Drop the indexes of {len(self.fields)} foreign keys that lead a composite index"

"""Django's schema editor for PostgreSQL, less the pattern (`LIKE`) index it adds beside every indexed `varchar`
column, for the columns holding public ids: ids are only compared whole, so that index is written and never read
(memory/index_ops.py drops the ones databases made before)."""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql.schema import DatabaseSchemaEditor as PostgresSchemaEditor


class DatabaseSchemaEditor(PostgresSchemaEditor):
    def _create_like_index_sql(self, model: Any, field: Any) -> Any:
        from memory.index_ops import holds_public_id  # the app's field class, once the backend is in use

        if holds_public_id(field):
            return None
        return super()._create_like_index_sql(model, field)  # type: ignore[misc]  # not in django-stubs

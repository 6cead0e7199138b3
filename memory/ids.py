"""Public ids: a short type prefix and a ULID (`src_01J…`), sortable by creation time."""

from __future__ import annotations

from typing import Any

from django.db import models
from ulid import ULID


def new_id(prefix: str) -> str:
    return f"{prefix}_{str(ULID()).lower()}"


class PublicIdField(models.CharField):
    """A primary key holding a prefixed ULID, generated on creation."""

    def __init__(self, *args: Any, prefix: str = "", **kwargs: Any) -> None:
        self.prefix = prefix
        kwargs.setdefault("max_length", 40)
        kwargs.setdefault("primary_key", True)
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        kwargs["prefix"] = self.prefix
        return name, path, args, kwargs

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if add and not value:
            value = new_id(self.prefix)
            setattr(model_instance, self.attname, value)
        return value

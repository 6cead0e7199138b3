"""Keyset paging with opaque cursors: stable under inserts, no OFFSET scans."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from django.utils.dateparse import parse_datetime

from memory.errors import ValidationFailed

RowT = TypeVar("RowT", bound=Model)


def encode_cursor(*values: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(values, default=str).encode()).decode()


def decode_cursor(cursor: str, size: int) -> list[Any]:
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationFailed("The cursor is not valid.", details={"cursor": ["Invalid cursor."]}) from exc
    if not isinstance(values, list) or len(values) != size:
        raise ValidationFailed("The cursor is not valid.", details={"cursor": ["Invalid cursor."]})
    return values


def decode_time_cursor(cursor: str) -> tuple[datetime, str]:
    """A (timestamp, id) cursor as written by `encode_cursor(moment.isoformat(), id)`."""
    moment_text, last_id = decode_cursor(cursor, 2)
    try:
        moment = parse_datetime(moment_text) if isinstance(moment_text, str) else None
    except ValueError:
        moment = None
    if moment is None or not isinstance(last_id, str):
        raise ValidationFailed("The cursor is not valid.", details={"cursor": ["Invalid cursor."]})
    return moment, last_id


def keyset_page(
    ordered: QuerySet[RowT], limit: int, cursor_of: Callable[[RowT], tuple[Any, ...]]
) -> tuple[list[RowT], str | None]:
    """One page of an ordered queryset, and the cursor that continues after its last row (None at the end)."""
    rows = list(ordered[: limit + 1])
    return rows[:limit], (encode_cursor(*cursor_of(rows[limit - 1])) if len(rows) > limit else None)

"""Keyset paging with opaque cursors: stable under inserts, no OFFSET scans."""

from __future__ import annotations

import base64
import json
from typing import Any

from memory.errors import ValidationFailed


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

"""JSON bodies with a size cap, a nesting cap and valid Unicode only.

Django's DATA_UPLOAD_MAX_MEMORY_SIZE (= MAX_JSON_BODY_BYTES) is checked when DRF takes the body; the cap is
checked here again so a lowered setting holds too. A body without Content-Length (chunked transfer encoding)
is read as well, under the same caps.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

from django.conf import settings
from rest_framework import exceptions
from rest_framework.parsers import JSONParser
from rest_framework.request import Request

# A lone UTF-16 surrogate ("\ud800" without its pair) decodes to a str that cannot be encoded as UTF-8:
# PostgreSQL refuses it, and so would every client reading it back.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "PAYLOAD_TOO_LARGE"

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"The request body is larger than {max_bytes} bytes.", code="PAYLOAD_TOO_LARGE")
        self.max_bytes = max_bytes


class NestedTooDeep(exceptions.ValidationError):
    def __init__(self, max_depth: int) -> None:
        super().__init__({"body": [f"JSON nested deeper than {max_depth} levels."]})
        self.max_depth = max_depth


class BodyRequest(Request):
    """DRF takes a request without Content-Length as bodiless; a chunked body has none, so read it anyway.
    (A POST with neither, `curl -X POST` without data, stays an empty body, as before.)"""

    def _load_stream(self) -> None:
        super()._load_stream()  # type: ignore[misc]
        raw = self._request
        chunked = "chunked" in raw.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if self._stream is None and chunked and "CONTENT_LENGTH" not in raw.META and not raw._read_started:
            self._stream = raw  # the parser reads at most the cap + 1 byte of it


class LimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.MAX_JSON_BODY_BYTES
        request = (parser_context or {}).get("request")
        declared = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
        if declared > limit:
            raise PayloadTooLarge(limit)
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise PayloadTooLarge(limit)
        if not body.strip():
            return {}  # an empty chunked body means what Content-Length: 0 means
        max_depth = settings.MAX_JSON_DEPTH
        try:
            data = super().parse(io.BytesIO(body), media_type, parser_context)
        except RecursionError:
            raise NestedTooDeep(max_depth) from None
        refuse_hostile_json(data, max_depth=max_depth)
        return data


def json_loads_checked(text: str | bytes) -> Any:
    """`json.loads` for JSON that arrives outside a JSON body (a multipart part), under the same depth and
    Unicode checks. Malformed JSON raises ValueError as `json.loads` does."""
    max_depth = settings.MAX_JSON_DEPTH
    try:
        data = json.loads(text)
    except RecursionError:
        raise NestedTooDeep(max_depth) from None
    refuse_hostile_json(data, max_depth=max_depth)
    return data


def refuse_hostile_json(data: Any, *, max_depth: int) -> None:
    """VALIDATION_ERROR for nesting past `max_depth` or a lone surrogate in any key or string (walked without
    recursion, so the check itself cannot overflow the stack)."""
    pending: list[tuple[Any, int, str]] = [(data, 1, "body")]
    while pending:
        value, depth, field = pending.pop()
        if isinstance(value, dict | list):
            if depth > max_depth:
                raise NestedTooDeep(max_depth)
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str) and LONE_SURROGATE.search(key):
                    _refuse_surrogate(field if depth > 1 else "body")
                pending.append((item, depth + 1, key if depth == 1 and isinstance(key, str) else field))
        elif isinstance(value, str) and LONE_SURROGATE.search(value):
            _refuse_surrogate(field)


def _refuse_surrogate(field: str) -> None:
    raise exceptions.ValidationError(
        {field: ["Text holds a lone UTF-16 surrogate (\\ud800-\\udfff without its pair); send valid Unicode."]}
    )

"""JSON bodies with a size cap (DRF reads the stream directly, past Django's DATA_UPLOAD_MAX_MEMORY_SIZE)."""

from __future__ import annotations

import io
from typing import Any

from django.conf import settings
from rest_framework import exceptions
from rest_framework.parsers import JSONParser


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "PAYLOAD_TOO_LARGE"

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"The request body is larger than {max_bytes} bytes.", code="PAYLOAD_TOO_LARGE")
        self.max_bytes = max_bytes


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

        return super().parse(io.BytesIO(body), media_type, parser_context)

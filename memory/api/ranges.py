"""Streaming a blob with HTTP Range support (a single byte range; 206, or 416 when unsatisfiable)."""

from __future__ import annotations

import re
from collections.abc import Generator

from django.http import HttpRequest, StreamingHttpResponse

from memory.api.streaming import streamed
from memory.errors import ServiceError
from memory.models import Blob
from memory.services.blobs import blob_open

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_PIECE = 256 * 1024


class RangeNotSatisfiable(ServiceError):
    code = "RANGE_NOT_SATISFIABLE"


def _byte_range(header: str, size: int) -> tuple[int, int] | None:
    """(first, last) inclusive, or None to send everything; RangeNotSatisfiable for a range past the end."""
    match = _RANGE.match(header.strip())
    if match is None:
        return None  # unknown units or several ranges: RFC 9110 lets us answer with the whole body
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # suffix: the last N bytes
        length = int(last)
        if length == 0:
            raise RangeNotSatisfiable("The requested range is empty.", details={"size": size})
        return max(0, size - length), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size or (last and int(last) < start):
        raise RangeNotSatisfiable("The requested range is outside the artifact.", details={"size": size})
    return start, end


def blob_response(request: HttpRequest, blob: Blob) -> StreamingHttpResponse:
    """The whole blob (200) or the asked range (206), read 256 KB at a time as the client takes it."""
    byte_range = _byte_range(request.headers.get("Range", ""), blob.size)
    first, last = byte_range or (0, blob.size - 1)
    response = StreamingHttpResponse(
        streamed(request, _read(blob, first, last)), status=206 if byte_range else 200, content_type=blob.mime_type
    )
    response["Content-Length"] = str(last - first + 1)
    if byte_range:
        response["Content-Range"] = f"bytes {first}-{last}/{blob.size}"
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = f'"{blob.sha256}"'
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    return response


def _read(blob: Blob, first: int, last: int) -> Generator[bytes]:
    with blob_open(blob) as stream:
        stream.seek(first)
        remaining = last - first + 1
        while remaining > 0:
            piece = stream.read(min(_PIECE, remaining))
            if not piece:
                break
            remaining -= len(piece)
            yield piece

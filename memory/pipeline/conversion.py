"""File conversion with markitdown, loaded lazily in the worker (never in the web process)."""

from __future__ import annotations

import io
import mimetypes
from pathlib import PurePath

from memory.models import Blob
from memory.services.blobs import blob_open


class ConversionError(Exception):
    pass


def convert_blob(blob: Blob, *, filename: str, mime_type: str) -> str:
    """Markdown for the blob's bytes. Raises ConversionError for unsupported or unreadable files."""
    from markitdown import MarkItDown, StreamInfo

    extension = PurePath(filename).suffix.lower() or (mimetypes.guess_extension(mime_type or "") or "")
    info = StreamInfo(mimetype=mime_type or None, extension=extension or None, filename=filename or None)
    with blob_open(blob) as stored:
        # markitdown's type detection wants a real io stream, not Django's File wrapper (at most 50 MB).
        stream = io.BytesIO(stored.read())
    try:
        result = MarkItDown(enable_plugins=False).convert_stream(stream, stream_info=info)
    except Exception as exc:  # markitdown raises many kinds; all mean "could not read this file"
        raise ConversionError(
            f"Could not convert {filename or 'the file'} ({mime_type or 'unknown type'}): {type(exc).__name__}"
        ) from exc
    text = (result.text_content or "").strip()
    if not text:
        raise ConversionError(f"{filename or 'The file'} contains no readable text.")
    return text

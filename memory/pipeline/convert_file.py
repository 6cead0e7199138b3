"""The file converter, run as a program of its own by memory.pipeline.conversion: the file's bytes on stdin, its
Markdown (UTF-8) on stdout. Exit status 2 with the error's type on stderr when markitdown cannot read the file.

A process per file: markitdown, magika and the PDF parsers hold hundreds of megabytes while they work and keep
their imports afterwards; a worker's pool process that converted in-process stayed that large. This one exits
and gives all of it back, and a crash in a parser ends this process, not the worker's.

    python memory/pipeline/convert_file.py FILENAME MIME_TYPE < file > markdown

Imports nothing of the project (no Django), so it starts in the time markitdown takes to import.
"""

from __future__ import annotations

import io
import mimetypes
import sys
from pathlib import PurePath

UNREADABLE = 2


def convert(data: bytes, *, filename: str, mime_type: str) -> str:
    from markitdown import MarkItDown, StreamInfo

    extension = PurePath(filename).suffix.lower() or (mimetypes.guess_extension(mime_type or "") or "")
    info = StreamInfo(mimetype=mime_type or None, extension=extension or None, filename=filename or None)
    result = MarkItDown(enable_plugins=False).convert_stream(io.BytesIO(data), stream_info=info)
    return (result.text_content or "").strip()


def main() -> int:
    filename, mime_type = sys.argv[1], sys.argv[2]
    data = sys.stdin.buffer.read()
    try:
        text = convert(data, filename=filename, mime_type=mime_type)
    except Exception as exc:  # markitdown raises many kinds; all mean "could not read this file"
        sys.stderr.write(type(exc).__name__)
        return UNREADABLE
    sys.stdout.buffer.write(text.encode("utf-8", errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

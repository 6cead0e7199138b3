"""File conversion with markitdown, in a process of its own per file (convert_file.py): never in the web process,
and never left behind in the worker's (see convert_file.py for why)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from memory.models import Blob
from memory.services.blobs import blob_open

CONVERTER = Path(__file__).resolve().with_name("convert_file.py")
UNREADABLE = 2  # convert_file.UNREADABLE, not imported: that module is a program, not a library


class ConversionError(Exception):
    pass


def convert_blob(blob: Blob, *, filename: str, mime_type: str) -> str:
    """Markdown for the blob's bytes. Raises ConversionError for unsupported or unreadable files, and when the
    converter crashes or runs past the pipeline's time limit."""
    with blob_open(blob) as stored:
        data = stored.read()  # at most 50 MB
    name = filename or "the file"
    limit = settings.PIPELINE_TIME_LIMIT_S
    try:
        done = subprocess.run(
            [sys.executable, str(CONVERTER), filename, mime_type],
            input=data, capture_output=True, timeout=limit, check=False, preexec_fn=_die_with_parent,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise ConversionError(f"Converting {name} took longer than {limit} s; it was stopped.") from exc
    if done.returncode == UNREADABLE:
        kind = done.stderr.decode("utf-8", errors="replace").strip()[:100] or "unknown error"
        raise ConversionError(f"Could not convert {name} ({mime_type or 'unknown type'}): {kind}")
    if done.returncode != 0:
        raise ConversionError(f"The converter stopped on {name} ({_exit_reason(done.returncode)}).")
    text = done.stdout.decode("utf-8", errors="replace").strip()
    if not text:
        raise ConversionError(f"{filename or 'The file'} contains no readable text.")
    return text


def _exit_reason(returncode: int) -> str:
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-returncode).name}; the file may be too large or damaged"
    return f"exit status {returncode}"


def _die_with_parent() -> None:
    """In the converter, before it runs: if the worker's process dies (the hard time limit), so does the converter."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)

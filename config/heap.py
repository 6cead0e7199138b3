"""Giving the C heap's free pages back to the operating system.

glibc keeps what onnxruntime, numpy, psycopg and Python free in its heaps (one per thread that allocates) instead
of returning it, and raises its mmap threshold after a large block is freed, so later large buffers land in the
heaps too: a pool process kept the high-water mark of its jobs for its life (docs/benchmarks.md, Footprint).
`heap_release` returns every whole free page now. On other C libraries it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError, TypeError):  # no C library found, or not glibc (musl, macOS)
        return None
    return trim


def heap_release() -> bool:
    """Return the C heap's free pages to the operating system; whether the C library could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True

"""Giving the C heap's free pages back to the operating system.

glibc keeps what onnxruntime, numpy, psycopg and Python free in its heaps (one per thread that allocates) instead
of returning it, and raises its mmap threshold after a large block is freed, so later large buffers land in the
heaps too: a pool process kept the high-water mark of its largest job for its life (docs/benchmarks.md,
Footprint). Releasing after every job costs the next job the page faults of memory it would have reused (~4 % more
CPU per 25-message job, measured), so `heap_release_if_grown` releases only once the process has grown by
`GROWN_MB` since its last release: similar jobs reuse what the last one freed and pay nothing; a large file's
memory goes back when it is done. And every process keeps its threads to HEAPS heaps (`heaps_shared`). On C
libraries other than glibc nothing is released or limited.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable

GROWN_MB = 32
# Every thread allocates from this many heaps (glibc's M_ARENA_MAX; its default is eight per core). A heap of its
# own per thread kept each thread's freed buffers: two embedding run threads held ~30 MiB more at the peak of a job
# with heaps of their own, ~5-10 MiB with one heap for all, 15-20 with two, at the same speed (issue 18, fifth
# pass). Python's own small objects do not come from these heaps.
HEAPS = 1
_M_ARENA_MAX = -8
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_resident_after_release = 0


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError, TypeError):  # no C library found, or not glibc (musl, macOS)
        return None
    return trim


def heaps_shared() -> None:
    """From now on, threads allocate from at most HEAPS heaps. Called as the process starts (config/__init__.py),
    before it starts threads; nothing happens on C libraries other than glibc."""
    # The symbols this process has loaded already: no search for the C library at every start (find_library runs
    # ldconfig in a subprocess).
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, HEAPS)


def resident_bytes() -> int:
    """This process's resident memory (0 where /proc does not say)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def heap_release_if_grown() -> bool:
    """Return the C heap's free pages to the operating system if this process grew by GROWN_MB since the last time
    it did; whether it released."""
    if _malloc_trim() is None or resident_bytes() - _resident_after_release < GROWN_MB * 1024 * 1024:
        return False
    heap_release()
    return True


def heap_release() -> None:
    """Return the C heap's free pages to the operating system now: after a one-off peak, such as loading a model
    (onnxruntime's temporaries while it reads and optimises one left ~6-27 MB of free pages in the heap)."""
    global _resident_after_release
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
        _resident_after_release = resident_bytes()

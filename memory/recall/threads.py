"""Threads recall hands work to inside this process (embedding a query, counting a small reach's vocabulary).

Each pool is made on first use, and made again in a forked child: a child does not inherit its parent's threads.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_pools: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_lock = threading.Lock()


def drained(name: str) -> None:
    """Waits until this process's pool `name` has done the work handed to it so far (a one-worker pool: in order)."""
    with _lock:
        held = _pools.get(name)
    if held is not None and held[0] == os.getpid():
        held[1].submit(lambda: None).result()


def process_pool(name: str, workers: int) -> ThreadPoolExecutor:
    """This process's pool `name` (its threads are named after it)."""
    with _lock:
        held = _pools.get(name)
        if held is None or held[0] != os.getpid():
            held = (os.getpid(), ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name))
            _pools[name] = held
        return held[1]

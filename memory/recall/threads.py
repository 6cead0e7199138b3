"""Threads recall hands work to inside this process (embedding a query, counting a small reach's vocabulary and
keeping the word counts a search made, sending access counts).

Each pool is made on first use, and made again in a forked child: a child does not inherit its parent's threads (nor
counts what its parent had queued or held), and its lock is made anew (a thread of the parent may have held it at the
fork).

Work nobody waits for can be handed on `after_searches`: it starts once no search runs in this process (`searching`),
or SEARCHES_WAITED after it was handed on at most. A search that hands on a count of its words then does not share
the cores with that count (docs/benchmarks.md, issue 18, twenty-third pass), though searches that start after the
count has do, as do those of other processes; a server never idle still counts, late.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

SEARCHES_WAITED = 1.0  # seconds from its hand-over work handed on `after_searches` waits for searches at most
DROPS_LOGGED_EVERY = 60.0  # seconds: work a full pool dropped is logged at most this often per pool, with the count

logger = logging.getLogger("memory.recall")

_pools: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_queued: dict[tuple[str, int], int] = {}  # (pool, process id) -> work handed to it and not yet done
_claimed: dict[str, set[str]] = {}  # pool -> the keys work handed to it holds until done (`claimed`), this process
_dropped: dict[str, tuple[int, float]] = {}  # pool -> work dropped since the last log line, and when that was
_searches = 0  # searches in flight in this process (`searching`)
_lock = threading.Lock()
_quiet = threading.Condition(_lock)  # notified when the last search in flight ends


def _forked() -> None:
    """In a forked child: the lock is free, none of the parent's work holds a key, and no search is in flight."""
    global _lock, _quiet, _searches
    _lock = threading.Lock()
    _quiet = threading.Condition(_lock)
    _searches = 0
    _claimed.clear()
    _dropped.clear()


os.register_at_fork(after_in_child=_forked)


@contextmanager
def searching() -> Iterator[None]:
    """A search in flight in this process while inside: work handed on `after_searches` waits for it to end."""
    global _searches
    process = os.getpid()
    with _lock:
        _searches += 1
    try:
        yield
    finally:
        if os.getpid() == process:  # a child forked inside starts with none in flight: its own end is none of them
            with _quiet:
                _searches -= 1
                if not _searches:
                    _quiet.notify_all()


def _searches_ended(deadline: float) -> None:
    """Waits until no search is in flight in this process, or `deadline` (time.monotonic) has passed."""
    with _quiet:
        _quiet.wait_for(lambda: not _searches, timeout=max(0.0, deadline - time.monotonic()))


def submitted(
    name: str,
    most: int,
    work: Callable[..., Any],
    *args: Any,
    after_searches: bool = False,
    holding: frozenset[str] | set[str] = frozenset(),
    drops_logged: bool = True,
) -> bool:
    """Hands `work(*args)` to this process's one-thread pool `name`, in order, unless `most` pieces of work are
    already waiting or running there (or the interpreter is shutting down): then it is dropped; `after_searches`:
    it starts once no search is in flight (`searching`), SEARCHES_WAITED from now at most (work waiting behind other
    work waits no longer); `holding`: keys the caller `claimed` for it, given back once it is done, or at once if it
    is dropped. Whether it was handed on. For work worth only so much memory: what fails in it is its own to log;
    what a full pool drops is logged here (`recall.work_dropped`, the count since the last line, at most every
    DROPS_LOGGED_EVERY per pool), unless the caller does without it (`drops_logged=False`: it does the work itself,
    logs its own, or drops on purpose)."""
    key = (name, os.getpid())
    deadline = time.monotonic() + SEARCHES_WAITED
    with _lock:
        waiting = _queued.get(key, 0)
        if waiting >= most:
            _claimed.get(name, set()).difference_update(holding)
            dropped = _counted_drop(name) if drops_logged else 0
        else:
            _queued[key] = waiting + 1
            dropped = None
    if dropped is not None:
        _log_drops(name, dropped, waiting)
        return False

    def run() -> None:
        try:
            if after_searches:
                _searches_ended(deadline)
            work(*args)
        finally:
            _done(key, holding)

    try:
        process_pool(name, 1).submit(run)
    except RuntimeError:  # the interpreter is shutting down
        _done(key, holding)
        return False
    return True


def _counted_drop(name: str, *, dropping: bool = True) -> int:
    """Counts one piece of work dropped by the full pool `name` (`dropping`; else counts none, as a piece of its work
    ends), under _lock: the count to log now, or 0 while the last line is younger than DROPS_LOGGED_EVERY (or
    nothing is counted)."""
    count, logged_at = _dropped.get(name, (0, float("-inf")))
    count += dropping
    now = time.monotonic()
    if not count or now - logged_at < DROPS_LOGGED_EVERY:
        _dropped[name] = (count, logged_at)
        return 0
    _dropped[name] = (0, now)
    return count


def _log_drops(name: str, dropped: int, waiting: int) -> None:
    if dropped:
        logger.warning("recall.work_dropped", extra={"pool": name, "waiting": waiting, "dropped": dropped})


def _done(key: tuple[str, int], holding: frozenset[str] | set[str]) -> None:
    """A piece of work of pool key[0] ended: its place and keys given back, and drops counted since the last line
    logged once that is old enough (the end of a burst is not left unsaid until the next drop)."""
    with _lock:
        _queued[key] -= 1
        _claimed.get(key[0], set()).difference_update(holding)
        waiting = _queued[key]
        dropped = _counted_drop(key[0], dropping=False) if key[0] in _dropped else 0
    _log_drops(key[0], dropped, waiting)


def claimed(name: str, keys: set[str]) -> set[str]:
    """Those of `keys` no work for pool `name` holds in this process, now held: work handed on for them alone waits
    once per key. Given back by `submitted` (its `holding`), or with `released` where no work is handed on."""
    with _lock:
        held = _claimed.setdefault(name, set())
        taken = keys - held
        held |= taken
        return taken


def released(name: str, keys: set[str]) -> None:
    with _lock:
        _claimed.get(name, set()).difference_update(keys)


def drained(name: str) -> None:
    """Waits until this process's pool `name` has done the work handed to it so far (a one-worker pool: in order)."""
    with _lock:
        held = _pools.get(name)
    if held is not None and held[0] == os.getpid():
        try:
            held[1].submit(lambda: None).result()
        except RuntimeError:  # the interpreter is shutting down: no new work, what was handed on is waited for
            held[1].shutdown(wait=True)


def process_pool(name: str, workers: int) -> ThreadPoolExecutor:
    """This process's pool `name` (its threads are named after it)."""
    with _lock:
        held = _pools.get(name)
        if held is None or held[0] != os.getpid():
            held = (os.getpid(), ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name))
            _pools[name] = held
        return held[1]

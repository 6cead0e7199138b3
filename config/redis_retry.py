"""Writes to Redis that must land even when Redis is away as they are made: an owner's memory version moved on after
a write committed (memory.services.audit), an erasure's mark and the deletion of the cached views it drops
(memory.recall.caching). Left undone, what was kept at the old version would be read again once Redis answers: a
corrected claim's old wording, an erased claim's text in the atlas, for as long as those caches live (up to a day).

`retried(key, work)`: `work` raised RedisError; this process's `redis-retry` thread calls it again FIRST_WAIT later,
then twice as long each time (LONGEST_WAIT at most), until it returns, or until RETRIED_SECONDS after the first
failure, when nothing kept before it is still read. One piece of work per key: a later one replaces one waiting
(moving a version on once, or dropping an owner's views once, does for every failure before it). When the process
exits, what still waits is tried once more, then logged as lost (`tried_once_more`); a process killed outright loses
it silently.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from redis.exceptions import RedisError

FIRST_WAIT = 0.5  # seconds
LONGEST_WAIT = 30.0
RETRIED_SECONDS = 24 * 3600  # the longest a cache read at a version or an erased owner's views live

logger = logging.getLogger("config.redis_retry")


@dataclass(frozen=True)
class _Owed:
    work: Callable[[], object]
    since: float  # time.monotonic() of the first failure
    due: float
    wait: float  # the wait before `due`; the next one is twice as long


_owed: dict[Hashable, _Owed] = {}
_trying = 0  # pieces of work taken from _owed and being tried
_changed = threading.Condition()
_thread: threading.Thread | None = None


def _forked() -> None:
    """A forked child owes nothing (its parent does) and has no thread; the lock is made anew."""
    global _changed, _thread, _trying
    _changed = threading.Condition()
    _owed.clear()
    _thread, _trying = None, 0


os.register_at_fork(after_in_child=_forked)


def retried(key: Hashable, work: Callable[[], object]) -> None:
    """`work` failed with Redis away: call it again on this process's `redis-retry` thread until it succeeds."""
    global _thread
    now = time.monotonic()
    with _changed:
        held = _owed.get(key)
        _owed[key] = _Owed(work, held.since if held else now, now + FIRST_WAIT, FIRST_WAIT)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_retrying, name="redis-retry", daemon=True)
            _thread.start()
        _changed.notify()


def owed() -> int:
    """How many pieces of work wait to be tried again in this process, or are being tried."""
    with _changed:
        return len(_owed) + _trying


def _retrying() -> None:
    global _trying
    while True:
        with _changed:
            _changed.wait_for(lambda: _owed)
            key, first = min(_owed.items(), key=lambda item: item[1].due)
            if first.due > time.monotonic():
                _changed.wait(first.due - time.monotonic())  # or until new work comes
                continue
            del _owed[key]
            _trying += 1
        try:
            _tried(key, first)
        finally:
            with _changed:
                _trying -= 1


def _tried(key: Hashable, owed: _Owed) -> None:
    try:
        owed.work()
    except RedisError as error:
        now = time.monotonic()
        if now - owed.since >= RETRIED_SECONDS:
            logger.error("redis_retry.given_up", extra={"key": repr(key), "error": type(error).__name__})
            return
        wait = min(owed.wait * 2, LONGEST_WAIT)
        with _changed:
            _owed.setdefault(key, _Owed(owed.work, owed.since, now + wait, wait))  # unless replaced meanwhile
    except Exception:
        logger.exception("redis_retry.failed", extra={"key": repr(key)})
    else:
        logger.info("redis_retry.done", extra={"key": repr(key), "seconds": round(time.monotonic() - owed.since, 1)})


def tried_once_more() -> None:
    """As the process ends: what still waits is tried once more, then logged as lost (atexit; uvicorn's lifespan
    shutdown, as it re-raises SIGTERM before atexit runs; a Celery pool process's shutdown, whose exit skips it)."""
    with _changed:
        left = list(_owed.items())
        _owed.clear()
    for key, work in left:
        try:
            work.work()
        except Exception as error:
            logger.error("redis_retry.lost", extra={"key": repr(key), "error": type(error).__name__})


atexit.register(tried_once_more)

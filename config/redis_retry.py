"""Writes to Redis that must land even when Redis is away as they are made: an owner's memory version moved on after
a write committed (memory.services.audit), an erasure's mark and the deletion of the cached views it drops
(memory.recall.caching), the credentials' generation after a token, user or partition changed (memory.credentials).
Left undone, what was kept at the old version would be read again once Redis answers: a corrected claim's old
wording, an erased claim's text in the atlas, for as long as those caches live (up to a day); a revoked token, for
up to CACHE_MAX_AGE_S in the other processes.

`retried(key, work)`: `work` raised RedisError; this process's `redis-retry` thread calls it again FIRST_WAIT later,
then twice as long each time (LONGEST_WAIT at most), and at once when Redis answers again (config.cache's watcher
heard it), until it returns, or until RETRIED_SECONDS after the first failure, when nothing kept before it is still
read. Jobs not sent are owed so too (config.queue.sent_or_owed). One piece of work per key: a later one replaces
one waiting (moving a version on once, or dropping an owner's views once, does for every failure before it). When the
process exits, what still waits is tried once more, and what fails is logged as lost (`tried_once_more`). A process
killed outright does not try it: the pieces a `Ledger` kept (`keep_ledger`) are done by another process.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Protocol

from redis.exceptions import RedisError

from config.cache import RedisAway, away_for, not_answering, redis_answers, when_redis_answers

FIRST_WAIT = 0.5  # seconds
LONGEST_WAIT = 30.0
RETRIED_SECONDS = 24 * 3600  # the longest a cache read at a version or an erased owner's views live
IN_FLIGHT_WAIT = 5.0  # seconds the process's end waits for the piece being tried
AFTER_AWAY = 0.05  # a piece refused while the process left Redis alone is tried this long after it asks again

logger = logging.getLogger("config.redis_retry")


@dataclass(frozen=True)
class _Owed:
    work: Callable[[], object]
    since: float  # time.monotonic() of the first failure
    due: float
    wait: float  # the wait before `due`; the next one is twice as long


class Ledger(Protocol):
    """A record of what is owed that outlives the process (memory.services.redis_debts)."""

    def recorded(self, key: Hashable) -> None:
        """The piece under `key` is owed from now (written down later, off the caller's thread; keys it does not
        know are left out)."""

    def written(self) -> None:
        """Whatever was `recorded` so far is written down."""

    def answered(self) -> None:
        """Redis answers again: what any process wrote down is done soon (off the caller's thread)."""


_owed: dict[Hashable, _Owed] = {}
_ledger: Ledger | None = None
_trying = 0  # pieces of work taken from _owed and being tried
_closing = False  # the process is ending (`tried_once_more`)
_changed = threading.Condition()
_thread: threading.Thread | None = None


def _forked() -> None:
    """A forked child owes nothing (its parent does) and has no thread; the lock is made anew."""
    global _changed, _thread, _trying, _closing
    _changed = threading.Condition()
    _owed.clear()
    _thread, _trying, _closing = None, 0, False


os.register_at_fork(after_in_child=_forked)


def retried(key: Hashable, work: Callable[[], object], most: int | None = None) -> bool:
    """`work` failed with Redis away: call it again on this process's `redis-retry` thread until it succeeds. Work
    that replaces a piece waiting keeps its place and its wait (an owner writing on through an outage is tried no
    more often for it). With `most`, not taken (False) where that many pieces are owed already."""
    global _thread
    if _ledger is not None:
        _ledger.recorded(key)  # kept for another process too, were this one killed before it is done
    now = time.monotonic()
    with _changed:
        if _closing:
            _lost(key, RedisError.__name__)
            return False
        held = _owed.get(key)
        if held is None and most is not None and len(_owed) >= most:
            return False
        _owed[key] = _Owed(work, now, now + FIRST_WAIT, FIRST_WAIT) if held is None else replace(held, work=work)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_retrying, name="redis-retry", daemon=True)
            try:
                _thread.start()
            except RuntimeError:  # the interpreter is shutting down: no thread now, and nothing tries it at exit
                del _owed[key]
                _lost(key, RedisError.__name__)
                return False
        _changed.notify()
    return True


def done_or_retried(
    key: Hashable, work: Callable[[], object], later: Callable[[], object] | None = None, most: int | None = None
) -> bool:
    """`work()` now; where it fails with RedisError, `later` (or `work`) `retried` under `key` (unless `most` pieces
    are owed already). Whether it was done now (the caller logs that it was not)."""
    try:
        work()
    except RedisError:
        retried(key, later or work, most)
        return False
    return True


def keep_ledger(ledger: Ledger | None) -> None:
    """From now, every piece `retried` is `recorded` by `ledger` too (None: by none)."""
    global _ledger
    _ledger = ledger


def _tried_now() -> None:
    """Redis answers again (config.cache.when_redis_answers): every piece owed is tried at once, from its first wait."""
    now = time.monotonic()
    with _changed:
        for key, owed_ in _owed.items():
            _owed[key] = replace(owed_, due=now, wait=FIRST_WAIT)
        _changed.notify()
    if _ledger is not None:
        _ledger.answered()  # a process killed during the outage (or one started during it) left some


when_redis_answers(_tried_now)


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
                _changed.notify_all()  # `tried_once_more` may wait for it


def _tried(key: Hashable, owed: _Owed) -> None:
    try:
        owed.work()
    except RedisError as error:
        now = time.monotonic()
        if now - owed.since >= RETRIED_SECONDS:
            logger.error("redis_retry.given_up", extra={"key": repr(key), "error": type(error).__name__})
            return
        wait = min(owed.wait * 2, LONGEST_WAIT)
        due = now + wait
        if isinstance(error, RedisAway):  # not tried: tried as soon as the process asks Redis again; while its
            # watcher waits for Redis, when it hears it (`_tried_now`), or LONGEST_WAIT later should that never come
            left = away_for()
            wait, due = owed.wait, now + (LONGEST_WAIT if math.isinf(left) else left + AFTER_AWAY)
        with _changed:
            if _closing:
                _lost(key, type(error).__name__)
            else:
                _owed.setdefault(key, _Owed(owed.work, owed.since, due, wait))  # unless replaced meanwhile
    except Exception:
        logger.exception("redis_retry.failed", extra={"key": repr(key)})
    else:
        logger.info("redis_retry.done", extra={"key": repr(key), "seconds": round(time.monotonic() - owed.since, 1)})


def _lost(key: Hashable, error: str) -> None:
    logger.error("redis_retry.lost", extra={"key": repr(key), "error": error})


def tried_once_more() -> None:
    """As the process ends (atexit; uvicorn's lifespan shutdown, as it re-raises SIGTERM before atexit runs; a Celery
    pool process's shutdown, whose exit skips it): the piece being tried ends (IN_FLIGHT_WAIT at most), what waits is
    tried once more, and once one fails, Redis is taken as away and the rest logged as lost without a try (each
    would wait out a connection's timeout). Nothing is owed after: work failing from now on is logged as lost."""
    global _closing
    with _changed:
        _closing = True
        _changed.wait_for(lambda: not _trying, timeout=IN_FLIGHT_WAIT)
        left = list(_owed.items())
        _owed.clear()
    away = "" if not left or redis_answers() else "TimeoutError"  # asked again, were it left alone a moment ago
    for key, owed_ in left:
        if away:
            _lost(key, away)
            continue
        try:
            owed_.work()
        except Exception as error:
            _lost(key, type(error).__name__)
            if not_answering(error):  # the rest would each wait out a timeout; another failure is this piece's own
                away = type(error).__name__
    if _ledger is not None:
        _ledger.written()  # what was lost is left to another process


atexit.register(tried_once_more)

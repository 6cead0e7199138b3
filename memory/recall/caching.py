"""Short-lived Redis caches of recall's lookups (word statistics, the reference time, the speakers named), keyed
per owner and reach. Redis being away costs the lookups, never the search.

A search knows every key it may read once it has the query's words: `read_ahead` reads them all in one round trip
(one search read five times: the statistics of each corpus, the reference time, the speakers), and for the rest of
the block `cached_many` answers from what it read, and `keep_many` (or `noted`, which leaves Redis to a thread, as
`kept_off_path` does) adds what was computed meanwhile.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from django.core.cache import cache
from redis.exceptions import RedisError

from memory.recall.threads import submitted

logger = logging.getLogger("memory.recall")

# The recall thread (memory.recall.threads) that keeps what searches computed in Redis, off their path (and counts a
# small reach's vocabulary, memory.recall.word_statistics), and the work waiting for it at most.
KEEPER = "vocabulary"
KEEPER_QUEUED = 8


def reach_key(kind: str, params: dict[str, Any]) -> str:
    """`recall:<kind>:<owner>:<digest of the partitions and scope read>`: one reach, one key space."""
    reach = hashlib.sha256(f"{sorted(params['partitions'])}|{params['scope']}".encode()).hexdigest()[:16]
    return f"recall:{kind}:{params['owner']}:{reach}"


def owner_key(kind: str, owner_id: int) -> str:
    """`recall:<kind>:<owner>:owner`: one owner's, whatever they reach (`owner_pattern` matches it too)."""
    return f"recall:{kind}:{owner_id}:owner"


def owner_pattern(kind: str, owner_id: int) -> str:
    """A key pattern (Redis MATCH) of every `reach_key` and `owner_key` of these kinds (a glob: "speaker*") for one
    owner, any reach."""
    return f"recall:{kind}:{owner_id}:*"


def dropped_key(owner_id: int) -> str:
    """Set anew each time an erasure drops the owner's cached views (no pattern of theirs matches it)."""
    return f"recall:dropped:{owner_id}"


def erasure_mark(owner_id: int) -> Any:
    """The owner's erasure mark now (within a search: as read ahead). What is counted after reading it and kept later,
    by a thread, is deleted again if the mark changed meanwhile (memory.recall.word_statistics)."""
    return cached_many([dropped_key(owner_id)]).get(dropped_key(owner_id))


def erasure_mark_now(owner_id: int) -> Any:
    """The owner's erasure mark as Redis holds it now, whatever this search read ahead (None: none, or Redis is
    away): to compare with `erasure_mark` after keeping what was counted since."""
    try:
        return cache.get(dropped_key(owner_id))
    except RedisError:
        return None


# The keys read ahead in this context (one search) and what Redis held for them; _ABSENT: nothing was held.
_read: ContextVar[dict[str, Any] | None] = ContextVar("recall_read_ahead", default=None)
_ABSENT = object()


@contextlib.contextmanager
def read_ahead(keys: list[str]) -> Iterator[None]:
    """Reads `keys` in one round trip; within the block, lookups of those keys ask Redis nothing."""
    found = cached_many(keys)
    token = _read.set({key: found.get(key, _ABSENT) for key in keys})
    try:
        yield
    finally:
        _read.reset(token)


def cached_many(keys: list[str]) -> dict[str, Any]:
    read = _read.get()
    if read is not None and all(key in read for key in keys):
        return {key: read[key] for key in keys if read[key] is not _ABSENT}
    try:
        return dict(cache.get_many(keys))
    except RedisError:
        return {}


def noted(values: dict[str, Any]) -> None:
    """Within a `read_ahead` block, later lookups of these keys answer `values` (Redis is not written)."""
    read = _read.get()
    if read is not None:
        read.update(values)


def keep_many(values: dict[str, Any], seconds: int) -> None:
    if values:
        noted(values)
        with contextlib.suppress(RedisError):
            cache.set_many(values, seconds)


def kept_unless_erased(keep: Callable[[], None], keys: list[str], owner_id: int, mark: Any) -> None:
    """`keep()`s what was computed from the owner's rows after their erasure `mark` (`erasure_mark`) was read, and
    deletes its `keys` again if an erasure dropped the owner's cached views since: they may hold what it erased."""
    try:
        keep()
        if erasure_mark_now(owner_id) != mark:
            cache.delete_many(keys)
    except Exception:  # kept in the background: the next search computes it again
        logger.exception("recall.not_kept")


def kept_off_path(values: dict[str, Any], seconds: int, owner_id: int) -> None:
    """Within a search, `values` computed from the owner's rows: later lookups answer them at once, and the KEEPER
    thread keeps them in Redis (here, where its queue is full), unless an erasure came between."""
    noted(values)
    mark = erasure_mark(owner_id)  # within a search: as read ahead, before the rows were read

    def keep() -> None:
        keep_many(values, seconds)

    if not submitted(KEEPER, KEEPER_QUEUED, kept_unless_erased, keep, list(values), owner_id, mark):
        kept_unless_erased(keep, list(values), owner_id, mark)

"""Redis caches of recall's lookups (word statistics, the reference time, the speakers named), keyed per owner and
reach, each kept from a minute to a day (what is read only at the memory version it was kept at, VERSIONED_SECONDS at
most). Redis being away costs the lookups, never the search.

A search knows every key it may read once it has the query's words: `read_ahead` reads them all in one round trip
(one search read five times: the statistics of each corpus, the reference time, the speakers), and for the rest of
the block `cached_many` answers from what it read, and `keep_many` (or `noted`, which leaves Redis to a thread, as
`kept_off_path` does) adds what was computed meanwhile.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import secrets
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from redis.exceptions import RedisError

from config.cache import RedisAway, redis_client
from config.redis_retry import done_or_retried, retried
from memory.models import RedisDebtKind
from memory.recall.threads import claimed, process_pool, released, submitted
from memory.services.audit import memory_version_key, memory_version_moved_on_if_kept

logger = logging.getLogger("memory.recall")

# The recall thread (memory.recall.threads) that keeps what searches computed in Redis, off their path (and counts a
# small reach's vocabulary, memory.recall.word_statistics), and the work waiting for it at most.
KEEPER = "vocabulary"
KEEPER_QUEUED = 8
# How long an erasure's mark outlives it: longer than any count a recall thread still has queued.
DROPPED_SECONDS = 3600
# An erasure sets a mark of this prefix as soon as it starts, and its mark proper once it commits: no copy of the
# owner's rows is held in between (memory.recall.held_vectors), so a search between its commit and the mark's set
# reads the rows. Kept ERASING_SECONDS at most, should the erasure be rolled back.
ERASING_MARK = "erasing:"
ERASING_SECONDS = 600
# The longest a value read from the owner's rows is kept at their memory version (`at_version`): read only while no
# write has changed it, so that long; and a change of version lost to a Redis failure as it committed costs no more.
VERSIONED_SECONDS = 3600


@functools.cache
def _digest_key() -> bytes:
    # Unkeyed, the digest of a word would be a dictionary away from the word.
    return hashlib.sha256(f"recall.word_statistics:{settings.SECRET_KEY}".encode()).digest()


def digests(words: list[str]) -> dict[str, str]:
    """Each word's digest in cache keys, keyed by this installation's secret, not the word ("" for "")."""
    key = _digest_key()
    return {word: hashlib.blake2b(word.encode(), digest_size=8, key=key).hexdigest() if word else "" for word in words}


def reach_key(kind: str, params: dict[str, Any]) -> str:
    """`recall:<kind>:<owner>:<digest of the partitions and scope read>`: one reach, one key space."""
    return f"recall:{kind}:{params['owner']}:{_reach_digest(tuple(params['partitions']), params['scope'])}"


@functools.lru_cache(maxsize=4096)
def _reach_digest(partitions: tuple[str, ...], scope: str) -> str:
    # Made once per reach, not for each of a search's dozen keys.
    return hashlib.sha256(f"{sorted(partitions)}|{scope}".encode()).hexdigest()[:16]


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


def drop_cached_views(owner_id: int) -> None:
    """Caches of derived views hold text (the atlas for a day, who spoke for an hour), counts of the owner's words and
    rows (from a minute to a day), and when the newest source happened: after an erasure the owner's go at once rather
    than when they expire (or, read only at the memory version they were kept at, stay unread until then). The
    erasure mark is set first: what a thread keeps after the keys are deleted, read before, sees it changed and goes
    again (`kept_unless_erased`). With Redis away, both are done once it answers (config.redis_retry)."""
    later = functools.partial(views_dropped_late, owner_id)
    if not done_or_retried(
        (RedisDebtKind.ERASED_VIEWS.value, owner_id), functools.partial(_views_dropped, owner_id), later
    ):
        logger.warning("erasure.cache_unavailable")


def _views_dropped(owner_id: int) -> None:
    _erasure_marked(owner_id)
    _views_deleted(owner_id)


def _dropped_when_redis_answers(owner_id: int) -> None:
    logger.warning("erasure.cache_unavailable")
    retried((RedisDebtKind.ERASED_VIEWS.value, owner_id), functools.partial(views_dropped_late, owner_id))


def views_dropped_late(owner_id: int) -> None:
    """An erasure's drop of the owner's cached views, done after Redis was away (config.redis_retry,
    memory.services.redis_debts)."""
    # The version first: a view built before the erasure and kept as it is built (the atlas), after this drop, is then
    # not read at the version the erasure's own change of it, owed too, has not moved on yet.
    memory_version_moved_on_if_kept(owner_id)
    _views_dropped(owner_id)


def _erasure_marked(owner_id: int, prefix: str = "", seconds: int = DROPPED_SECONDS) -> None:
    cache.set(dropped_key(owner_id), f"{prefix}{secrets.token_hex(8)}", seconds)


def _views_deleted(owner_id: int) -> None:
    client = redis_client()
    # Every recall key of the owner's but the erasure mark (`recall:dropped:<owner>`, no ":" after it). A SCAN walks
    # the whole keyspace whatever it matches (an owner's 5,000 keys among a million: 1.25 s), so as few as can be,
    # each of large steps.
    for pattern in (f"atlas:{owner_id}:*", owner_pattern("*", owner_id)):
        keys = list(client.scan_iter(match=cache.make_key(pattern), count=5000))
        if keys:
            client.delete(*keys)


def _views_deleted_off_path(owner_id: int) -> None:
    released(ERASING, {str(owner_id)})  # an erasure committed from now on sets its mark after this starts: its own
    try:
        _views_deleted(owner_id)
    except RedisError:
        _dropped_when_redis_answers(owner_id)


# The thread that deletes an erased owner's cached views after the erasure commits, off the request's path.
ERASING = "erased-views"


def views_dropped_on_commit(owner_id: int) -> None:
    """An erasure of the owner's in the current transaction: at once, their erasure mark says an erasure is under
    way (ERASING_MARK); once it commits, their erasure mark is set anew, and their
    cached views are deleted by the ERASING thread (where the interpreter is shutting down, at once; with Redis away,
    both once it answers); once however many erasures the transaction made (a source's erasure erases its claims too,
    a node's its claims), and once for the erasures that commit while a deletion of theirs waits there (a SCAN walks
    the whole keyspace: one erasure after another would queue one each)."""
    connection = transaction.get_connection()
    if any(getattr(func, "drops_views_of", None) == owner_id for _, func, _ in connection.run_on_commit):
        return  # a rolled-back savepoint takes its own callbacks with it, never one registered outside it
    # Redis away: no search reads a version, so none uses a held copy; the mark proper is owed at the commit.
    with contextlib.suppress(RedisError):
        _erasure_marked(owner_id, ERASING_MARK, ERASING_SECONDS)

    def dropped() -> None:
        try:
            _erasure_marked(owner_id)
        except RedisError:
            _dropped_when_redis_answers(owner_id)
            return
        if not claimed(ERASING, {str(owner_id)}):
            return  # a deletion of theirs waits on the thread, to start after this mark: it does for both
        try:
            process_pool(ERASING, 1).submit(_views_deleted_off_path, owner_id)
        except RuntimeError:  # the interpreter is shutting down
            _views_deleted_off_path(owner_id)

    dropped.drops_views_of = owner_id  # type: ignore[attr-defined]
    transaction.on_commit(dropped)


def erasure_mark(owner_id: int) -> Any:
    """The owner's erasure mark now (within a search: as read ahead). What is counted after reading it and kept later,
    by a thread, is deleted again if the mark changed meanwhile (memory.recall.word_statistics)."""
    return cached_many([dropped_key(owner_id)]).get(dropped_key(owner_id))


MARK_UNKNOWN = object()  # Redis did not say


def erasure_mark_now(owner_id: int) -> Any:
    """The owner's erasure mark as Redis holds it now, whatever this search read ahead (None: none; MARK_UNKNOWN:
    Redis did not answer): to compare with `erasure_mark` after keeping what was counted since."""
    try:
        return cache.get(dropped_key(owner_id))
    except RedisError:
        return MARK_UNKNOWN


# The keys read ahead in this context (one search) and what Redis held for them; _ABSENT: nothing was held.
_read: ContextVar[dict[str, Any] | None] = ContextVar("recall_read_ahead", default=None)
_ABSENT = object()
# What this context's search has `kept_off_path` so far: (values, seconds, owner, erasure mark), handed on at its end.
_Keep = tuple[dict[str, Any], int, int, Any]
_keeps: ContextVar[list[_Keep] | None] = ContextVar("recall_keeps", default=None)


@contextlib.contextmanager
def read_ahead(keys: list[str]) -> Iterator[None]:
    """Reads `keys` in one round trip; within the block, lookups of those keys ask Redis nothing."""
    keys = list(dict.fromkeys(keys))  # each once, though several lookups name it (the owner's memory version)
    found = cached_many(keys)
    token, keeps = _read.set({key: found.get(key, _ABSENT) for key in keys}), _keeps.set([])
    try:
        yield
    finally:
        pending = _keeps.get() or []
        _keeps.reset(keeps)
        _read.reset(token)
        if pending:
            _handed_on(pending)


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
    """`values` kept `seconds`; a failure is passed over (kept, maybe), but RedisAway raised: not asked, nothing of
    them written (a large `set_many` refused after its first batch raises a ConnectionError instead: config.cache)."""
    if values:
        noted(values)
        with _failure_passed_over():
            cache.set_many(values, seconds)


# Whether a write of this `kept_unless_erased` kept something, or failed in a way that may have (a reply lost).
_written: ContextVar[bool] = ContextVar("recall_written", default=False)


@contextlib.contextmanager
def _failure_passed_over() -> Iterator[None]:
    try:
        yield
    except RedisAway:
        raise  # not asked: this write kept nothing (`kept_unless_erased` drops nothing unless an earlier one did)
    except RedisError:
        pass  # kept, maybe (a reply lost)
    _written.set(True)


def memory_version_now(owner_id: int) -> Any:
    """The owner's memory version now (memory.services.audit.memory_version: it changes with every write search
    reads; within a search, as read ahead; None where Redis holds none)."""
    key = memory_version_key(owner_id)
    return cached_many([key]).get(key)


def at_version(values: dict[str, Any], version: Any) -> dict[str, Any]:
    """`values` read from the owner's rows at their memory `version`, to keep: each with it (`held_at` reads them)."""
    return {key: (version, value) for key, value in values.items()}


def held_at(keys: list[str], version: Any) -> dict[str, Any]:
    """What the cache holds for `keys` that was kept `at_version` this memory `version` (not at another)."""
    return {
        key: held[1]
        for key, held in cached_many(keys).items()
        if isinstance(held, tuple) and len(held) == 2 and held[0] == version
    }


def added_many(values: dict[str, Any], seconds: int) -> None:
    """`values` kept where Redis holds nothing for their keys (what another kept meanwhile stays, as it was kept)."""
    if values:
        noted(values)
        with _failure_passed_over():
            cache.add_many(values, seconds)  # type: ignore[attr-defined]  # config.cache.SharedClientRedisCache


def kept_unless_erased(keep: Callable[[], None], keys: list[str], owner_id: int, mark: Any) -> None:
    """`keep()`s what was computed from the owner's rows after their erasure `mark` (`erasure_mark`) was read, and
    deletes its `keys` again if an erasure dropped the owner's cached views since: they may hold what it erased."""
    written = _written.set(False)
    try:
        keep()
    except RedisAway:  # not asked: nothing kept since, the next search computes it again
        if not _written.get():
            return  # nor before (an earlier write of this keep may have been)
    except RedisError:
        pass  # kept, maybe (a reply lost): as if kept
    except Exception:
        logger.exception("recall.not_kept")
        return
    finally:
        _written.reset(written)
    if erasure_mark_now(owner_id) == mark:  # MARK_UNKNOWN never is: kept, maybe, without knowing what came between
        return
    try:
        cache.delete_many(keys)
    except RedisError:
        _dropped_when_redis_answers(owner_id)  # all of the owner's, once Redis answers


def kept_off_path(values: dict[str, Any], seconds: int, owner_id: int) -> None:
    """`values` computed from the owner's rows: later lookups within the search answer them at once, and the KEEPER
    thread keeps them in Redis (here, where its queue is full), unless an erasure came between: at the end of the
    `read_ahead` block, with everything else it kept so (one piece of work a search), or at once outside one."""
    noted(values)
    kept = (values, seconds, owner_id, erasure_mark(owner_id))  # the mark: as read ahead, before the rows were read
    pending = _keeps.get()
    if pending is None:
        _handed_on([kept])
    else:
        pending.append(kept)


def _handed_on(pending: list[_Keep]) -> None:
    for owner_id, mark in dict.fromkeys((owner_id, mark) for _, _, owner_id, mark in pending):
        mine = [(values, seconds) for values, seconds, owner, held in pending if (owner, held) == (owner_id, mark)]
        by_seconds: dict[int, dict[str, Any]] = {}
        for values, seconds in mine:
            by_seconds.setdefault(seconds, {}).update(values)

        def keep(by_seconds: dict[int, dict[str, Any]] = by_seconds) -> None:
            for seconds, values in by_seconds.items():
                keep_many(values, seconds)

        kept_by_keeper(keep, [key for values in by_seconds.values() for key in values], owner_id, mark)


def kept_by_keeper(
    keep: Callable[[], None], keys: list[str], owner_id: int, mark: Any, most: int = KEEPER_QUEUED
) -> None:
    """`keep()` handed to the KEEPER thread (here, where `most` pieces of work wait there already), its `keys`
    deleted again if an erasure of the owner's came after `mark` (`kept_unless_erased`)."""
    if not submitted(KEEPER, most, kept_unless_erased, keep, keys, owner_id, mark, drops_logged=False):  # kept here
        kept_unless_erased(keep, keys, owner_id, mark)

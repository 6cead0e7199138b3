"""The cache backend: Django's Redis cache, with one Redis client (and connection pool) per process.

Django keeps its cache backends per asyncio context, and under ASGI every request is a context of its own: each
request built a new RedisCache, hence a new redis-py client and pool, and its first lookup opened a new connection
(connect, HELLO): 100 searches opened 100 connections, ~2 ms of each (docs/benchmarks.md, issue 18). Here every
backend instance of a process with the same servers and options shares one client. redis-py's pools are
thread-safe and start afresh in a forked child, so the Celery pool processes get connections of their own.

Django's client also builds a new `redis.Redis` on every call (~0.25 ms here: its options and response callbacks
set up again), and writes `set_many` as MSET then an EXPIRE per key inside MULTI/EXEC. Here one `redis.Redis` per
connection pool serves every call, and `set_many` is one SET with its expiry per key in one pipeline without a
transaction: a cold search's statistics lookups 1.2 -> ~0.3 ms (docs/benchmarks.md, issue 18, twelfth pass).
Past SCRIPT_ABOVE_KEYS keys with an expiry, they go as one script call per KEYS_PER_SCRIPT_CALL keys instead:
packing a command and parsing a reply for each key took ~8 µs of CPU a key, 37-63 ms with the GIL held for the
~5,000 word counts of a small memory's vocabulary (memory.recall.word_statistics), while that process's searches
waited for it (docs/benchmarks.md, issue 18, twenty-first pass).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import redis
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.utils.functional import cached_property
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

SCRIPT_ABOVE_KEYS = 64  # a set_many of more keys than this, with an expiry, is sent by _SET_EACH
KEYS_PER_SCRIPT_CALL = 250  # a script call holds Redis for its whole batch: ~0.5 ms each here, not one long pause
_SET_EACH = """
for i, key in ipairs(KEYS) do
    redis.call('SET', key, ARGV[i + 1], 'EX', ARGV[1])
end
"""


# A Redis that did not answer (a call timed out, or could not connect) is not asked again by this process until a
# watcher thread of its own hears it answer a PING (every WATCH_EVERY seconds): each call would wait its socket timeout
# (REDIS_TIMEOUT_S) for the same answer, and a write makes several. Without a watcher (a call that found it so made
# none: a test's), for AWAY_SECONDS. When the watcher hears an answer the wait ends and each of `_on_answer` is called
# (config.redis_retry: what this process owes Redis is tried at once).
AWAY_SECONDS = 5.0
WATCH_EVERY = 1.0
_away_until = 0.0
_watcher: threading.Thread | None = None  # while one runs, Redis is away
_heard = 0  # how many times Redis was heard again (`redis_heard`)
_watch_lock = threading.Lock()
_on_answer: list[Callable[[], object]] = []

logger = logging.getLogger("config.cache")


class RedisAway(RedisConnectionError):
    """A call not made: a call of this process's found Redis not answering, and it has not answered since."""


def redis_away() -> bool:
    """Whether this process leaves Redis alone: a call of its timed out or could not connect, and Redis has not
    answered since (the cache's calls fail at once meanwhile, as RedisAway; a job is not sent)."""
    return redis_watched() or time.monotonic() < _away_until


def noted_away(probe: Callable[[], object] | None = None) -> None:
    """Redis did not answer a call: left alone AWAY_SECONDS, and with a `probe` (a PING on the client that found it
    so) until a watcher thread hears it answer."""
    global _away_until, _watcher
    _away_until = time.monotonic() + AWAY_SECONDS
    if probe is None:
        return
    with _watch_lock:
        if _watcher is not None:
            return
        logger.warning("redis.away")  # once an outage: then the watcher's PINGs, and `redis.answers`
        watcher = threading.Thread(target=_watched, args=(probe,), name="redis-watch", daemon=True)
        _watcher = watcher
        try:
            watcher.start()
        except RuntimeError:  # the interpreter is ending: the deadline alone
            _watcher = None


def _watched(probe: Callable[[], object]) -> None:
    global _watcher
    me = threading.current_thread()
    while _watcher is me:
        time.sleep(WATCH_EVERY)
        try:
            answered = bool(probe())
        except (RedisConnectionError, RedisTimeoutError):
            continue
        except Exception:
            logger.exception("redis.watch_failed")  # the deadline alone from now
            answered = False
        with _watch_lock:
            if _watcher is not me:
                return  # ended meanwhile (`redis_heard`)
            if not answered:
                _watcher = None
                return
        redis_heard()


def redis_heard() -> None:
    """Redis answered: the wait ends (a watcher stops), and what waited for an answer is told (`_on_answer`)."""
    global _away_until, _watcher, _heard
    with _watch_lock:
        was_away = redis_away()
        _away_until, _watcher = 0.0, None
        _heard += was_away  # a call of the outage failing from now on does not start another (`asked_of_redis`)
    if was_away:
        logger.warning("redis.answers")  # the end of an outage, beside its `redis.away`
        for told in list(_on_answer):
            try:
                told()
            except Exception:
                logger.exception("redis.answer_not_told")


def when_redis_answers(told: Callable[[], object]) -> None:
    """`told()` each time Redis answers again after it was away (on the thread that heard it)."""
    _on_answer.append(told)


def redis_watched() -> bool:
    """Whether a watcher thread of this process waits for Redis to answer (asking it once every WATCH_EVERY). One that
    died without saying so (it cannot, but if it did) holds nothing: AWAY_SECONDS alone, as without one."""
    watcher = _watcher
    return watcher is not None and watcher.is_alive()


def away_for() -> float:
    """Seconds until this process asks Redis again (0: it does now; infinity while a watcher waits for an answer,
    which tells `when_redis_answers`)."""
    return math.inf if redis_watched() else max(0.0, _away_until - time.monotonic())


def _forked() -> None:
    global _watcher, _watch_lock
    _watcher, _watch_lock = None, threading.Lock()  # a child has no watcher: the deadline alone


os.register_at_fork(after_in_child=_forked)


def redis_client() -> Any:
    """The process's one Redis client on the cache's pool, for keys of its own (no cache prefix, no serializer): its
    calls honour `redis_away` and time out after REDIS_TIMEOUT_S."""
    from django.core.cache import cache

    return cache._cache.get_client(write=True)  # type: ignore[attr-defined]  # private: not in django-stubs


def _pinged(client: redis.Redis | None = None) -> bool:
    return bool(redis.Redis.execute_command(client or redis_client(), "PING"))  # not _GuardedRedis's: asked regardless


def redis_answers() -> bool:
    """A PING on the cache's pool whatever `redis_away` says (/healthz, a process's last tries as it ends): an answer
    ends the wait at once, no answer starts it."""
    try:
        answered = _pinged()
    except (RedisConnectionError, RedisTimeoutError):
        noted_away(_pinged)
        return False
    if answered:
        redis_heard()
    return answered


def not_answering(error: BaseException | None) -> bool:
    """Whether a failed call to Redis found it not answering (a timeout, no connection) rather than answering with an
    error (a full memory, a read-only replica, a refused command): only the first starts the wait."""
    return isinstance(error, (RedisConnectionError, RedisTimeoutError))


def asked_of_redis(call: Callable[..., Any], *args: Any, found_away: Callable[[BaseException], bool] = not_answering,
                   probe: Callable[[], object] = _pinged, **kwargs: Any) -> Any:  # fmt: skip
    """`call(*args, **kwargs)`, a call to Redis: RedisAway, not made, while `redis_away`; one whose failure
    `found_away` says is Redis not answering (as the caller's client reports it) starts the wait, until `probe` (a
    PING of the process's Redis) hears it answer."""
    if redis_away():
        raise RedisAway("Redis did not answer a moment ago; not asked again until it does.")
    heard = _heard
    try:
        return call(*args, **kwargs)
    except Exception as error:
        if found_away(error) and heard == _heard:  # not a call of the outage that ended meanwhile
            noted_away(probe)
        raise


class _GuardedRedis(redis.Redis):
    """The cache's client: no call while Redis is away; a call that times out or cannot connect says it is."""

    def execute_command(self, *args: Any, **options: Any) -> Any:  # commands, scripts (EVALSHA), SCAN steps
        return asked_of_redis(super().execute_command, *args, probe=self._probe, **options)

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        pipeline = super().pipeline(*args, **kwargs)
        pipeline.execute = functools.partial(asked_of_redis, pipeline.execute, probe=self._probe)  # type: ignore[method-assign]
        return pipeline

    @cached_property
    def _probe(self) -> Callable[[], object]:
        return functools.partial(_pinged, self)  # the Redis of this client's pool


class SharedRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._client = _GuardedRedis  # Django's: redis.Redis
        self._redis: dict[int, Any] = {}  # id of a connection pool -> the one redis.Redis on it
        self._redis_lock = threading.Lock()

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]  # private: not in django-stubs
        client = self._redis.get(id(pool))
        if client is None:
            with self._redis_lock:
                made = self._client(connection_pool=pool)
                client = self._redis.setdefault(id(pool), made)
        return client

    def set_many(self, data: Mapping[Any, Any], timeout: Any) -> None:
        serializer = self._serializer  # type: ignore[attr-defined]  # private: not in django-stubs
        if timeout and len(data) > SCRIPT_ABOVE_KEYS:
            self._set_each(data, timeout)
            return
        pipeline = self.get_client(None, write=True).pipeline(transaction=False)
        for key, value in data.items():
            if timeout == 0:  # as Django's client: a zero timeout expires the key at once
                pipeline.delete(key)
            else:
                pipeline.set(key, serializer.dumps(value), ex=timeout)
        pipeline.execute()

    def add_many(self, data: Mapping[Any, Any], timeout: Any) -> None:
        serializer = self._serializer  # type: ignore[attr-defined]  # private: not in django-stubs
        pipeline = self.get_client(None, write=True).pipeline(transaction=False)
        for key, value in data.items():
            pipeline.set(key, serializer.dumps(value), ex=timeout, nx=True)
        pipeline.execute()

    def _set_each(self, data: Mapping[Any, Any], timeout: int) -> None:
        serializer = self._serializer  # type: ignore[attr-defined]  # private: not in django-stubs
        script = self.get_client(None, write=True).register_script(_SET_EACH)  # EVALSHA, loading it if Redis lacks it
        items = list(data.items())
        for start in range(0, len(items), KEYS_PER_SCRIPT_CALL):
            batch = items[start : start + KEYS_PER_SCRIPT_CALL]
            try:
                script(keys=[key for key, _ in batch], args=[timeout, *(serializer.dumps(value) for _, value in batch)])
            except RedisAway as error:
                if start:  # the batches before were written: not "nothing asked"
                    raise RedisConnectionError("Redis went away part way through a set_many.") from error
                raise


_clients: dict[str, SharedRedisCacheClient] = {}
_clients_lock = threading.Lock()


class SharedClientRedisCache(RedisCache):
    @cached_property
    def _cache(self) -> SharedRedisCacheClient:
        servers, options = self._servers, self._options  # type: ignore[attr-defined]  # private: not in django-stubs
        key = repr((servers, sorted(options.items())))
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = SharedRedisCacheClient(servers, **options)
            return client

    def add_many(self, data: Mapping[str, Any], timeout: int) -> None:
        """Each of `data` kept `timeout` seconds where the cache holds nothing for its key (as `add`, in one pipeline:
        SET NX with its expiry per key)."""
        if data:
            made = {self.make_key(key): value for key, value in data.items()}
            self._cache.add_many(made, self.get_backend_timeout(timeout))

    def validate_key(self, key: Any) -> None:
        """Nothing to check: Django's validation only warns of keys memcached would refuse, and every key here is
        made by this code. It cost ~2.5 µs a key, a third of a vocabulary's writing once the script sends it."""

"""Checking a credential without asking the database on every call, and the token's rate window.

Every REST and MCP call needs its token (by secret or by id), the token's owner and that user's partitions: three
PostgreSQL round trips on every call, for rows that almost never change. They are kept in this process instead,
each entry tagged with the *credentials generation* it was read under: a random value in Redis that every change
of a token, a user or a partition replaces (`credentials_changed`, at once and again after commit). A call reads
the generation in the same Redis round trip as its rate window (one Lua script), and uses what this process holds
only when the generation is still the one it was read under; otherwise it reads the rows again. So a token
revoked, rotated or narrowed, a user deactivated or a partition created or deactivated, in any process, counts on
the next call everywhere. Expiry is checked on every call against the cached `expires_at`.

When Redis cannot be reached nothing cached is trusted (every call reads the database) and the rate limit fails
open, as it always did; after a failure Redis is tried again a second later, not on every call in between. A
generation that vanished (Redis flushed or restarted empty) is replaced by a new random value, so entries read
before can never match again. Entries also age out after CACHE_MAX_AGE_S: the bound on staleness if a change
could not reach Redis at all (logged as an error).
"""

from __future__ import annotations

import copy
import logging
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from redis.exceptions import RedisError

from config.cache import RedisAway, redis_client
from config.redis_retry import done_or_retried
from memory.models import AccessToken, Partition, RedisDebtKind, User

logger = logging.getLogger("memory.credentials")

GENERATION_KEY = "memory:credentials:generation"
WINDOW_S = 60  # the rate limit counts calls per minute
CACHE_MAX_AGE_S = 300
CACHE_SIZE = 2048

# KEYS[1]: the generation; KEYS[2] (optional): a sliding window of call times (a sorted set, scored by time).
# ARGV: a fresh generation (set when none is there), now, window, limit, this call's member.
# Answers {generation} or {generation, allowed 1/0, seconds to wait}; numbers as strings (Lua truncates floats).
_SCRIPT = """
local generation = redis.call('GET', KEYS[1])
if not generation then
  redis.call('SET', KEYS[1], ARGV[1], 'NX')
  generation = redis.call('GET', KEYS[1])
end
if #KEYS < 2 then return {generation} end
local now, window, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
if redis.call('ZCARD', KEYS[2]) >= limit then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {generation, '0', tostring(tonumber(oldest[2]) + window - now)}
end
redis.call('ZADD', KEYS[2], now, ARGV[5])
redis.call('EXPIRE', KEYS[2], window + 1)
return {generation, '1', '0'}
"""


@dataclass(frozen=True)
class Gate:
    """What one round trip to Redis said: the generation, and the rate window's verdict if one was asked."""

    generation: str
    allowed: bool = True
    wait_s: float = 0.0
    window: str = ""  # the window's key, when a verdict was asked for


def _redis() -> Any:
    return redis_client()


_script: Any = None


def gate(*, window: str = "", limit: int = 0) -> Gate | None:
    """The generation, and when `window` is given one call counted in it against `limit` per minute. None when
    Redis is unreachable (then nothing cached may be trusted and the call is not limited)."""
    global _script
    try:  # RedisAway at once while Redis is away (config.cache.redis_away): no call waits for it again
        if _script is None:
            _script = _redis().register_script(_SCRIPT)
        keys = [GENERATION_KEY, window] if window else [GENERATION_KEY]
        now = time.time()
        answer = _script(keys=keys, args=[secrets.token_hex(16), now, WINDOW_S, limit, f"{now}:{secrets.token_hex(4)}"])
    except RedisError as error:
        if not isinstance(error, RedisAway):  # the outage itself is logged once (config.cache: redis.away)
            logger.warning("credentials.redis_unavailable", extra={"error": type(error).__name__})
        _forget_all()
        return None
    generation = answer[0].decode()
    if not window:
        return Gate(generation)
    return Gate(generation, allowed=answer[1] == b"1", wait_s=float(answer[2]), window=window)


def bearer_secret(authorization: str) -> str:
    """The secret of an `Authorization: Bearer <secret>` header (REST and MCP alike); "" when it is not of that form."""
    scheme, _, secret = authorization.partition(" ")
    return secret.strip() if scheme.lower() == "bearer" else ""


def window_key(token: AccessToken | None, ident: str = "") -> str:
    return f"memory:throttle:token:{token.pk}" if token is not None else f"memory:throttle:ip:{ident}"


def rate_for(token: AccessToken | None) -> int:
    from django.conf import settings

    return (token.rate_limit_per_minute if token else None) or settings.RATE_LIMIT_PER_MINUTE


def credentials_changed() -> None:
    """A token, user or partition changed: every process reads them again on its next call. Called at once and
    again after commit, so a process that reads the rows between the two cannot keep the old ones."""
    _bump()
    transaction.on_commit(_bump)


def _bump() -> None:
    _forget_all()
    # Other processes keep what they read (a revoked token) until they read the rows again (CACHE_MAX_AGE_S at most):
    # moved on once Redis answers instead (config.redis_retry), within seconds of a short outage.
    if not done_or_retried((RedisDebtKind.CREDENTIALS_GENERATION.value,), generation_moved_on):
        logger.error("credentials.generation_not_bumped")


def generation_moved_on() -> None:
    _redis().set(GENERATION_KEY, secrets.token_hex(16))


T = TypeVar("T")


class _Cache(Generic[T]):
    """A small LRU of values read under a generation, shared by the threads of this process."""

    def __init__(self) -> None:
        self._entries: OrderedDict[str, tuple[str, float, T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, generation: str) -> T | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != generation or time.monotonic() - entry[1] > CACHE_MAX_AGE_S:
                return None
            self._entries.move_to_end(key)
            return entry[2]

    def peek(self, key: str) -> T | None:
        """The value whatever its generation (to know which rate window to ask for before the generation)."""
        with self._lock:
            entry = self._entries.get(key)
            return entry[2] if entry else None

    def put(self, key: str, generation: str, value: T) -> None:
        with self._lock:
            self._entries[key] = (generation, time.monotonic(), value)
            self._entries.move_to_end(key)
            while len(self._entries) > CACHE_SIZE:
                self._entries.popitem(last=False)

    def values(self) -> list[T]:
        with self._lock:
            return [entry[2] for entry in self._entries.values()]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_tokens: _Cache[AccessToken] = _Cache()
_partitions: _Cache[list[Partition]] = _Cache()


def _forget_all() -> None:
    _tokens.clear()
    _partitions.clear()


@dataclass(frozen=True)
class Checked:
    """A token as it is now (a copy of its own: callers may change it; None when no token has that secret or id)
    and the verdict of its rate window, when one was asked for and counted under this very token and limit."""

    token: AccessToken | None
    verdict: Gate | None


def token_checked(*, digest: str = "", token_id: str = "", count_call: bool) -> Checked:
    """The token with this secret hash (or id), from this process when the generation allows, else from the
    database; with `count_call`, the call counted in the token's rate window in the same round trip."""
    key = f"secret:{digest}" if digest else f"id:{token_id}"
    known = _tokens.peek(key)
    answer = gate(window=window_key(known), limit=rate_for(known)) if count_call and known else gate()
    token = _tokens.get(key, answer.generation) if answer else None
    if token is None:
        found = AccessToken.objects.select_related("owner")
        token = (found.filter(secret_hash=digest) if digest else found.filter(pk=token_id)).first()
        if token is not None and answer is not None:
            _tokens.put(key, answer.generation, token)
    counted = answer is not None and bool(answer.window) and token is not None and known is not None
    if counted and (answer.window != window_key(token) or rate_for(token) != rate_for(known)):  # type: ignore[union-attr]
        counted = False  # counted against another window or limit: the throttle asks again
    return Checked(_own_copy(token, answer.generation if answer else None), answer if counted else None)


def _own_copy(token: AccessToken | None, generation: str | None) -> AccessToken | None:
    if token is None:
        return None
    mine = copy.copy(token)
    mine.owner = copy.copy(token.owner)
    mine._credentials_generation = generation  # type: ignore[attr-defined]
    return mine


def token_use_written(token: AccessToken, when: datetime) -> None:
    """The token's last use is written (or was, by another process) as of `when`: the entries of this process
    say so, so its next calls in the same minute write nothing."""
    for held in _tokens.values():
        if held.pk == token.pk:
            held.last_used_at = when


def token_generation(token: AccessToken) -> str | None:
    """The generation `token` was checked under in this call (None: not checked through this module), so the
    partitions of the same call can be cached under it."""
    return getattr(token, "_credentials_generation", None)


def partitions_of(user: User, generation: str | None) -> list[Partition] | None:
    """The user's partitions read under `generation` in this process (copies), or None."""
    if generation is None:
        return None
    found = _partitions.get(str(user.pk), generation)
    return [copy.copy(partition) for partition in found] if found is not None else None


def partitions_keep(user: User, generation: str | None, partitions: list[Partition]) -> None:
    if generation is not None:
        _partitions.put(str(user.pk), generation, [copy.copy(partition) for partition in partitions])


def _changed(sender: Any, instance: Any, update_fields: Any = None, **kwargs: Any) -> None:
    if sender is User and update_fields is not None and set(update_fields) <= {"last_login"}:
        return  # a web sign-in changes nothing a token relies on
    credentials_changed()


def _partition_changed(sender: Any, instance: Partition, **kwargs: Any) -> None:
    from memory.services.audit import memory_changed

    # Its key is shown with every result of its rows: what is kept at the owner's memory version (a held copy's results,
    # memory.recall.held_vectors) is read again, a key renamed in the admin too, or the partition deleted.
    memory_changed(instance.owner_id)


def connect_signals() -> None:
    """Every way a token, user or partition row changes through the ORM (services, admin forms, erasure) ends
    here; a queryset `.update()` of those models must call `credentials_changed()` itself (and, for a partition,
    `memory_changed`)."""
    for model in (AccessToken, User, Partition):
        post_save.connect(_changed, sender=model, dispatch_uid=f"credentials-{model.__name__}-save")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"credentials-{model.__name__}-delete")
    post_save.connect(_partition_changed, sender=Partition, dispatch_uid="memory-version-Partition-save")
    post_delete.connect(_partition_changed, sender=Partition, dispatch_uid="memory-version-Partition-delete")

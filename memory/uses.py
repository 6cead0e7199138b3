"""What this service has been used for, remembered in Redis without expiry so every web process of a fleet knows: a
web process prepares right after start only what is used (the MCP transports, config.asgi; the query embedder,
memory.recall.warm_up) and spends no memory or start-up time on the rest. Each use's key is its module's."""

from __future__ import annotations

import contextlib

from django.core.cache import cache
from redis.exceptions import RedisError


def used_before(key: str, *, unknown: bool) -> bool:
    """Whether any process of this service noted the use `key`; `unknown` when Redis cannot say."""
    try:
        return cache.get(key) is not None
    except RedisError:
        return unknown


def use_note(key: str) -> None:
    """Remember the use `key` (without expiry; a lost key only means one cold first use after a start)."""
    with contextlib.suppress(RedisError):
        cache.set(key, 1, timeout=None)

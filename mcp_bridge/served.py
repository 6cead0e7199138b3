"""Whether this service has served MCP: a web process builds its MCP transports right after start only then
(config.asgi.LazyMcpTransports). Kept in Redis, so every web process of a fleet knows; importing this module does
not import the MCP SDK."""

from __future__ import annotations

import contextlib

from django.core.cache import cache
from redis.exceptions import RedisError

SERVED_KEY = "mcp:served"


def mcp_served_before() -> bool:
    """Whether any web process of this service has had an MCP request. True when Redis cannot say: then warming up,
    as every process did before, is the safe side."""
    try:
        return cache.get(SERVED_KEY) is not None
    except RedisError:
        return True


def mcp_served_note() -> None:
    """Remember that this service serves MCP (without expiry; a lost key only means one cold first call)."""
    with contextlib.suppress(RedisError):
        cache.set(SERVED_KEY, 1, timeout=None)

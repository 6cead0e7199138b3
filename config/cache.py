"""The cache backend: Django's Redis cache, with one Redis client (and connection pool) per process.

Django keeps its cache backends per asyncio context, and under ASGI every request is a context of its own: each
request built a new RedisCache, hence a new redis-py client and pool, and its first lookup opened a new connection
(connect, HELLO): 100 searches opened 100 connections, ~2 ms of each (docs/benchmarks.md, issue 18). Here every
backend instance of a process with the same servers and options shares one client. redis-py's pools are
thread-safe and start afresh in a forked child, so the Celery pool processes get connections of their own.
"""

from __future__ import annotations

import threading

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.utils.functional import cached_property

_clients: dict[str, RedisCacheClient] = {}
_clients_lock = threading.Lock()


class SharedClientRedisCache(RedisCache):
    @cached_property
    def _cache(self) -> RedisCacheClient:
        servers, options = self._servers, self._options  # type: ignore[attr-defined]  # private: not in django-stubs
        key = repr((servers, sorted(options.items())))
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = RedisCacheClient(servers, **options)
            return client

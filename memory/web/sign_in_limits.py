"""allauth's sign-in rate limits keep their counts in the cache (`allauth.core.internal.ratelimit`): with Redis away
(down, or not answering a moment ago: config.cache.redis_away) a sign-in was a 500. They fail open instead, as the
API's throttle does (memory.credentials.gate): counted while Redis answers, not counted while it does not."""

from __future__ import annotations

from typing import Any

from redis.exceptions import RedisError


class FailOpenCache:
    """The cache as allauth's rate limits use it (get, add, set, delete), a Redis failure read as nothing counted."""

    def __init__(self, cache: Any) -> None:
        self._cache = cache

    def get(self, key: str, default: Any = None, *args: Any, **kwargs: Any) -> Any:
        return self._or(default, "get", key, default, *args, **kwargs)

    def add(self, *args: Any, **kwargs: Any) -> bool:
        return bool(self._or(True, "add", *args, **kwargs))  # its lock, taken: nothing else counts either

    def set(self, *args: Any, **kwargs: Any) -> None:
        self._or(None, "set", *args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> bool:
        return bool(self._or(False, "delete", *args, **kwargs))

    def _or(self, failed: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self._cache, method)(*args, **kwargs)
        except RedisError:
            return failed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cache, name)


def sign_in_limits_fail_open() -> None:
    from allauth.core.internal import ratelimit

    if not isinstance(ratelimit.cache, FailOpenCache):
        ratelimit.cache = FailOpenCache(ratelimit.cache)

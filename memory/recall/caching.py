"""Short-lived Redis caches of recall's lookups (word statistics, the reference time, the speakers named), keyed
per owner and reach. Redis being away costs the lookups, never the search."""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

from django.core.cache import cache
from redis.exceptions import RedisError


def reach_key(kind: str, params: dict[str, Any]) -> str:
    """`recall:<kind>:<owner>:<digest of the partitions and scope read>`: one reach, one key space."""
    reach = hashlib.sha256(f"{sorted(params['partitions'])}|{params['scope']}".encode()).hexdigest()[:16]
    return f"recall:{kind}:{params['owner']}:{reach}"


def cached_many(keys: list[str]) -> dict[str, Any]:
    try:
        return dict(cache.get_many(keys))
    except RedisError:
        return {}


def keep_many(values: dict[str, Any], seconds: int) -> None:
    if values:
        with contextlib.suppress(RedisError):
            cache.set_many(values, seconds)

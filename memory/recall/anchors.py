"""What a search is anchored to besides its words, read from the memories in reach:

- the reference time: the newest source in reach (capped at now). Recency and "last week" count back from it,
  so an archive imported today ranks by its own timeline instead of all of it looking a year old or older;
- the people a question names who spoke in those memories: a word of the question that is a speaker's name
  ("What does Melanie do to relax?"). Questions about a person are answered by that person's own turns far
  more often than by turns that only mention them (docs/benchmarks.md, issue 17).

Both are cached for a minute per owner and reach: a minute-old reference time moves recency by nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.utils import timezone
from redis.exceptions import RedisError

CACHE_SECONDS = 60
# The first word of a speaker's name, as the index on it (memory_chunk.chunk_owner_speaker) has it.
SPEAKER_NAME = "lower(split_part(c.speaker, ' ', 1))"
ROLE_SPEAKERS = ("", "user", "assistant", "system", "tool", "other")


def _key(kind: str, params: dict[str, Any], extra: str = "") -> str:
    reach = hashlib.sha256(f"{sorted(params['partitions'])}|{params['scope']}|{extra}".encode()).hexdigest()[:16]
    return f"recall:{kind}:{params['owner']}:{reach}"


def _cached(key: str) -> Any:
    try:
        return cache.get(key)
    except RedisError:
        return None


def _keep(key: str, value: Any) -> None:
    with contextlib.suppress(RedisError):
        cache.set(key, value, CACHE_SECONDS)


def reference_time(params: dict[str, Any]) -> datetime:
    """When the newest source in reach happened (now if there is none, or it claims to be from the future)."""
    now = timezone.now()
    key = _key("newest", params)
    newest = _cached(key)
    if newest is None:
        with connection.cursor() as cursor:
            # One index probe per partition (source_owner_recent: owner, partition, occurred_at DESC).
            cursor.execute(
                """
                SELECT max(newest) FROM unnest(%(partitions)s::text[]) AS p(id), LATERAL (
                    SELECT s.occurred_at AS newest FROM memory_source s
                    WHERE s.owner_id = %(owner)s AND s.partition_id = p.id AND s.tombstoned_at IS NULL
                          AND s.scope = %(scope)s AND s.occurred_at IS NOT NULL
                    ORDER BY s.occurred_at DESC LIMIT 1
                ) latest
                """,
                params,
            )
            newest = cursor.fetchone()[0] or now
        _keep(key, newest)
    return min(newest, now)


def speakers_named(params: dict[str, Any], terms: list[str]) -> frozenset[str]:
    """The query words that are the (first) name of someone who spoke in the memories in reach."""
    words = sorted({term for term in terms if term.isalpha() and term not in ROLE_SPEAKERS})
    if not words:
        return frozenset()
    key = _key("speakers", params, ",".join(words))
    named = _cached(key)
    if named is None:
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT w.word FROM unnest(%(words)s::text[]) AS w(word)
                WHERE EXISTS (
                    SELECT 1 FROM memory_chunk c
                    WHERE c.owner_id = %(owner)s AND {SPEAKER_NAME} = w.word
                          AND c.partition_id = ANY(%(partitions)s)
                )
                """,  # noqa: S608 (a fixed SQL fragment; every value is a parameter)
                params | {"words": words},
            )
            named = [row[0] for row in cursor.fetchall()]
        _keep(key, named)
    return frozenset(named)

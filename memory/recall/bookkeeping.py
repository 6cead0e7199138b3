"""Access bookkeeping off the request path: a search adds the claims it returned to a Redis hash (one
round trip, sent from a thread of this process so the answer does not wait for it); beat flushes the hash into
`access_count` / `last_accessed_at` with one UPDATE. A flush first waits for what its own process queued.

Failing open: if Redis is down or away (config.cache.redis_away), a search still answers and those accesses are
simply not counted. Counts are applied at least once: a flush whose UPDATE fails leaves them for the next one, and
if Redis fails between a committed UPDATE and dropping the hash, the next flush applies them again.
"""

from __future__ import annotations

import logging
import time

import redis
from django.db import connection

from config.cache import RedisAway, redis_client
from memory.recall.threads import drained, submitted

logger = logging.getLogger("memory.recall")
PENDING = "recall:access:pending"
FLUSHING = "recall:access:flushing"
FLUSH_LOCK = "recall:access:flush-lock"
FLUSH_LOCK_SECONDS = 300  # longer than any flush; a crashed flusher's lock lapses


def _client() -> redis.Redis:
    # The process's client (config.cache.redis_client): while Redis is away a count is dropped at once, and a send
    # that finds it not answering starts the wait for the rest of the process.
    client: redis.Redis = redis_client()
    return client


# One sender thread per process (memory.recall.threads), in order. Counts beyond MAX_QUEUED (Redis slow or away) are
# dropped, as they are when Redis is down: an access count is not worth unbounded memory.
MAX_QUEUED = 1000
SENDER = "access-bookkeeping"


def note_access(claim_ids: list[str]) -> None:
    """Counts an access of each claim, on the sender thread (returns at once)."""
    if claim_ids and not submitted(SENDER, MAX_QUEUED, _send, list(claim_ids), drops_logged=False):
        logger.warning("recall.bookkeeping_dropped")


def _send(claim_ids: list[str]) -> None:
    try:
        pipe = _client().pipeline(transaction=False)
        for claim_id in claim_ids:
            pipe.hincrby(PENDING, claim_id, 1)
        pipe.execute()
    except RedisAway:
        logger.info("recall.bookkeeping_unavailable", extra={"claims": len(claim_ids), "error": "RedisAway"})
    except redis.RedisError:
        logger.warning("recall.bookkeeping_unavailable", extra={"claims": len(claim_ids)})


def _apply(client: redis.Redis) -> int:
    """Add the counts held in FLUSHING to the claims, then drop the hash. If the UPDATE fails the hash stays,
    and the next flush applies it before taking new counts (a rename onto it would overwrite it)."""
    pending = client.hgetall(FLUSHING).items()
    counts = {key.decode() if isinstance(key, bytes) else key: int(value) for key, value in pending}
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory_claim AS c SET access_count = c.access_count + batch.n, last_accessed_at = now() "
            "FROM unnest(%s::text[], %s::int[]) AS batch(id, n) WHERE c.id = batch.id",
            [list(counts), list(counts.values())],
        )
        updated = cursor.rowcount
    client.delete(FLUSHING)
    return updated


def flush_access() -> int:
    """Move the pending counts into the claims (first those of a flush that failed); returns how many claims
    were updated."""
    drained(SENDER)  # what this process queued is in Redis first (the sender runs in order)
    client = _client()
    # One flush at a time (beat ticks can overlap a slow one): two would both apply the same FLUSHING hash.
    if not client.set(FLUSH_LOCK, "1", nx=True, ex=FLUSH_LOCK_SECONDS):
        return 0
    try:
        return _flush(client)
    finally:
        client.delete(FLUSH_LOCK)


def _flush(client: redis.Redis) -> int:
    updated = _apply(client) if client.exists(FLUSHING) else 0
    try:
        client.rename(PENDING, FLUSHING)  # atomic: searches from now on count into a fresh hash
    except redis.ResponseError:
        return updated  # nothing pending
    updated += _apply(client)
    logger.info("recall.access_flushed", extra={"claims": updated, "at": time.time()})
    return updated

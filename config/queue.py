"""Sending a job to the queue (Celery on Redis) from a request or a job: never while this process found Redis not
answering a moment ago (config.cache.redis_away), and a send that times out or cannot connect says so for the rest
of the process. No publish retries: with the broker down the caller's answer must not wait; what it sends is sent
again by beat's sweeps (receipts still queued, rows without a vector)."""

from __future__ import annotations

from typing import Any

from kombu.exceptions import OperationalError

from config.cache import asked_of_redis, not_answering


def job_sent(task: Any, **options: Any) -> None:
    """`task.apply_async(**options)` without retries; RedisAway, unsent, where Redis is away."""
    asked_of_redis(task.apply_async, retry=False, found_away=publish_not_answered, **options)


def publish_not_answered(error: BaseException) -> bool:
    """Whether a publish failed for want of an answer. kombu raises every failure of its transport as OperationalError:
    a Redis that answered with an error (a full memory, a read-only replica) and a bug of its own (a KeyError) too.
    The cause tells them apart: Redis not answering, or the socket failing (an OSError)."""
    if isinstance(error, OperationalError):
        return isinstance(error.__cause__, OSError) or (error.__cause__ is not None and not_answering(error.__cause__))
    return not_answering(error)

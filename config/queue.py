"""Sending a job to the queue (Celery on Redis) from a request or a job: never while this process found Redis not
answering a moment ago (config.cache.redis_away), and a send that times out or cannot connect says so for the rest
of the process. No publish retries: with the broker down the caller's answer must not wait; what it sends is sent
again by beat's sweeps (receipts still queued, rows without a vector)."""

from __future__ import annotations

from typing import Any

from kombu.exceptions import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from config.cache import asked_of_redis


def job_sent(task: Any, **options: Any) -> None:
    """`task.apply_async(**options)` without retries; RedisAway, unsent, where Redis is away."""
    asked_of_redis(
        task.apply_async, retry=False, failures=(OperationalError, RedisConnectionError, RedisTimeoutError), **options
    )

"""Sending a job to the queue (Celery on Redis) from a request or a job: never while this process found Redis not
answering a moment ago (config.cache.redis_away), and a send that times out or cannot connect says so for the rest
of the process. No publish retries: with the broker down the caller's answer must not wait. A job not sent for want of
an answer is owed (config.redis_retry: sent once Redis answers again), up to OWED_JOBS of them; beat's sweeps send
the rest (receipts still queued, rows without a vector)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from kombu.exceptions import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError

from config.cache import asked_of_redis, not_answering
from config.redis_retry import done_or_retried

OWED_JOBS = 1000  # pieces of work owed to Redis by a process (of any kind) past which a job is left to the sweeps


class QueueNotAnswering(RedisConnectionError):
    """A job not sent: the broker (Redis) did not answer."""


def job_sent(task: Any, **options: Any) -> None:
    """`task.apply_async(**options)` without retries; RedisAway, unsent, where Redis is away; QueueNotAnswering where
    it does not answer now."""
    try:
        asked_of_redis(task.apply_async, retry=False, found_away=publish_not_answered, **options)
    except OperationalError as error:
        if publish_not_answered(error):
            raise QueueNotAnswering(str(error)) from error
        raise


def sent_or_owed(key: Hashable, send: Callable[[], object], later: Callable[[], object] | None = None) -> bool:
    """`send()` (a `job_sent`, and what goes with it) now; where Redis does not answer, `later` (or `send`) sent
    once it does (config.redis_retry), one piece of work per `key`, unless OWED_JOBS are owed already. Whether it was
    sent now; anything but Redis not answering is raised."""
    return done_or_retried(key, send, later, most=OWED_JOBS)


def publish_not_answered(error: BaseException) -> bool:
    """Whether a publish failed for want of an answer. kombu raises every failure of its transport as OperationalError:
    a Redis that answered with an error (a full memory, a read-only replica) and a bug of its own (a KeyError) too.
    The cause tells them apart: Redis not answering, or the socket failing (an OSError)."""
    if isinstance(error, OperationalError):
        return isinstance(error.__cause__, OSError) or not_answering(error.__cause__)
    return not_answering(error)

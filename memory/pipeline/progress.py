"""Live progress: one helper sends every pipeline event to the owner's websocket group."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypedDict

from channels.layers import get_channel_layer
from redis.exceptions import RedisError

from memory.models import Operation, Source

logger = logging.getLogger("memory.progress")
# An event waits at most SEND_TIMEOUT_S for Redis (a send takes well under a millisecond). After one failed for want
# of Redis, none is tried for PAUSE_AFTER_FAILURE_S: a Redis that takes connections and never answers held each event
# of a job for the whole timeout (three events, six seconds added to the job); a stopped one refuses at once anyway.
SEND_TIMEOUT_S = 2.0
PAUSE_AFTER_FAILURE_S = 10.0


class OperationProgress(TypedDict):
    type: str
    operationId: str
    sourceId: str | None
    partitionId: str
    status: str
    step: str
    stepsDone: list[str]
    counts: dict[str, object]
    errorCode: str


def owner_group(owner_id: int) -> str:
    return f"owner-{owner_id}"


class SourceProcessed(TypedDict):
    type: str
    sourceId: str
    kind: str
    partitionKey: str


def publish_progress(operation: Operation) -> None:
    payload: OperationProgress = {
        "type": "operation.progress",
        "operationId": operation.pk,
        "sourceId": operation.source_id,
        "partitionId": operation.partition_id,
        "status": operation.status,
        "step": operation.step,
        "stepsDone": [str(done["step"]) for done in operation.steps_done],
        "counts": dict(operation.counts),
        "errorCode": operation.error_code,
    }
    _send(operation.owner_id, payload)


def publish_source_processed(source: Source) -> None:
    payload: SourceProcessed = {
        "type": "source.processed",
        "sourceId": source.pk,
        "kind": source.kind,
        "partitionKey": source.partition.key,
    }
    _send(source.owner_id, payload)


class _EventLoop:
    """One event loop per process, in a daemon thread, started on first use (after any fork). The channel
    layer keeps its Redis connections per loop, so sends reuse one connection instead of opening one each
    time (async_to_sync would start a fresh loop, and so a fresh connection, for every event)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0
        self.quiet_until = 0.0  # time.monotonic() before which no event is sent (after a failed send)

    def run(self, coroutine: Coroutine[Any, Any, None], timeout: float) -> None:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                self._loop = asyncio.new_event_loop()
                self._pid = os.getpid()
                threading.Thread(target=_serve, args=(self._loop,), name="progress-events", daemon=True).start()
            loop = self._loop
        sent = asyncio.run_coroutine_threadsafe(coroutine, loop)
        try:
            sent.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            # Left running, it would deliver this event once Redis answers, after later ones. Cancelled, what it had
            # not yet sent is dropped (a command already written to Redis still runs when Redis answers again).
            sent.cancel()
            raise

    def stop(self) -> None:
        """Stops and closes this process's loop (tests); the next event starts another."""
        with self._lock:
            if self._loop is not None and self._pid == os.getpid():
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop = None


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    loop.run_forever()
    # Closed on its own thread once stopped: left to the garbage collector, its close (which channels_redis wraps to
    # flush the layer) could run on a thread inside another running loop and fail there.
    loop.close()


_events = _EventLoop()


def _send(owner_id: int, payload: OperationProgress | SourceProcessed) -> None:
    """The one way events leave the server: to the owner's group, tagged with the owner for the consumer."""
    layer = get_channel_layer()
    if layer is None or time.monotonic() < _events.quiet_until:
        return
    message = {"type": "memory.event", "owner_id": owner_id, "payload": payload}
    try:
        _events.run(layer.group_send(owner_group(owner_id), message), timeout=SEND_TIMEOUT_S)
    except Exception as exc:  # progress is a courtesy; the receipt in the database is the record
        # Only Redis out of reach pauses the sends: an event the layer refused is its own failure, not every owner's.
        paused = PAUSE_AFTER_FAILURE_S if isinstance(exc, TimeoutError | OSError | RedisError) else 0.0
        _events.quiet_until = time.monotonic() + paused
        logger.warning(
            "progress.publish_failed",
            extra={"eventType": payload["type"], "error": type(exc).__name__, "pausedSeconds": paused},
        )

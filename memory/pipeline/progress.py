"""Live progress: one helper sends every pipeline event to the owner's websocket group."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any, TypedDict

from channels.layers import get_channel_layer

from memory.models import Operation, Source

logger = logging.getLogger("memory.progress")


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


# Events waiting to be sent, at most: past it (Redis slow or away) new ones are dropped, never the job's time.
QUEUE_SIZE = 1000
SEND_TIMEOUT_S = 2


class _Sender:
    """One event loop per process, in a daemon thread, started on first use (after any fork), that sends the events
    one after another in the order they were published; the job that publishes one never waits for Redis (a round
    trip of ~0.5 ms a send, three sends a job; up to the 2 s timeout a send with Redis away). The channel layer
    keeps its Redis connections per loop, so sends reuse one connection instead of opening one each time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[tuple[str, dict[str, Any]]] | None = None
        self._pid = 0

    def send(self, group: str, message: dict[str, Any]) -> None:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                self._loop, self._queue, self._pid = asyncio.new_event_loop(), None, os.getpid()
                self._loop.call_soon(self._start)
                threading.Thread(target=self._loop.run_forever, name="progress-events", daemon=True).start()
            loop = self._loop
        loop.call_soon_threadsafe(self._put, group, message)

    def wait_sent(self, timeout: float = 5) -> None:
        """Returns once every event published before the call was sent (or dropped): at a pool process's end."""
        with self._lock:
            loop = self._loop if self._pid == os.getpid() else None
        if loop is not None:
            asyncio.run_coroutine_threadsafe(self._joined(), loop).result(timeout=timeout)

    def _start(self) -> None:
        self._queue = asyncio.Queue(QUEUE_SIZE)
        asyncio.get_running_loop().create_task(self._sending(self._queue))

    def _put(self, group: str, message: dict[str, Any]) -> None:
        assert self._queue is not None  # _start ran first: the loop runs its callbacks in order
        try:
            self._queue.put_nowait((group, message))
        except asyncio.QueueFull:  # progress is a courtesy; the receipt in the database is the record
            logger.warning("progress.publish_dropped", extra={"event": message["payload"]["type"]})

    async def _joined(self) -> None:
        assert self._queue is not None
        await self._queue.join()

    async def _sending(self, queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
        while True:
            group, message = await queue.get()
            try:
                layer = get_channel_layer()  # the layer as configured now (its connections are kept per loop)
                await asyncio.wait_for(layer.group_send(group, message), timeout=SEND_TIMEOUT_S)
            except Exception:  # Redis away or slow: this event is lost, the next ones are tried
                logger.warning("progress.publish_failed", extra={"event": message["payload"]["type"]})
            finally:
                queue.task_done()


_events = _Sender()


def _send(owner_id: int, payload: OperationProgress | SourceProcessed) -> None:
    """The one way events leave the server: to the owner's group, tagged with the owner for the consumer."""
    if get_channel_layer() is None:
        return
    _events.send(owner_group(owner_id), {"type": "memory.event", "owner_id": owner_id, "payload": payload})


def wait_sent(timeout: float = 5) -> None:
    """Returns once the events this process published so far have been sent (or dropped)."""
    _events.wait_sent(timeout)

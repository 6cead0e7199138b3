"""Live progress: one helper sends every pipeline event to the owner's websocket group."""

from __future__ import annotations

import logging
from typing import TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from memory.models import Operation, Source

logger = logging.getLogger("memory.progress")


class OperationProgress(TypedDict):
    type: str
    operationId: str
    sourceId: str | None
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


def _send(owner_id: int, payload: OperationProgress | SourceProcessed) -> None:
    """The one way events leave the server: to the owner's group, tagged with the owner for the consumer."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            owner_group(owner_id), {"type": "memory.event", "owner_id": owner_id, "payload": payload}
        )
    except Exception:  # progress is a courtesy; the receipt in the database is the record
        logger.warning("progress.publish_failed", extra={"event": payload["type"]})

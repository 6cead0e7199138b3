"""Processing receipts: queue, read with the interruption projection, retry (seeds/000)."""

from __future__ import annotations

import functools
import logging
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from config.cache import asked_of_redis
from config.queue import job_sent, sent_or_owed
from memory.access import Access
from memory.errors import Conflict, ServiceError
from memory.models import Operation, OperationStatus, Scope, Source
from memory.selectors import in_reach
from memory.services.audit import audit_record

logger = logging.getLogger("memory.operations")

_OPEN = (OperationStatus.QUEUED, OperationStatus.PROCESSING)


def operation_enqueue(*, source: Source, request_hash: str = "", counts: dict[str, int] | None = None) -> Operation:
    """Create a queued receipt for the source's current version; the job is sent once the data is committed."""
    operation = Operation.objects.create(
        owner_id=source.owner_id,  # ids: a source read by its identity has not loaded its owner or partition
        partition_id=source.partition_id,
        source=source,
        source_version=source.version,
        request_hash=request_hash,
        counts=counts or {},
    )
    transaction.on_commit(lambda: operation_dispatch(operation.pk))
    return operation


def operation_dispatch(operation_id: str) -> None:
    """Send the job, then record its id: a receipt without one was never sent as far as anyone knows, and the beat
    sweep (operations_requeue_unsent) sends it. That covers a broker that is down and a sender that dies between
    the two (a job id recorded first would have marked a job the queue never got as sent, for good). With Redis not
    answering, the job is sent (and its id recorded) by this process once Redis answers (config.queue.sent_or_owed),
    or by the sweep, whichever comes first. A job sent twice is harmless: the second delivery finds the receipt no
    longer queued."""
    send = functools.partial(_dispatched, operation_id, str(uuid.uuid4()))
    try:
        if not sent_or_owed(("operation", operation_id), send, functools.partial(_dispatched_later, send)):
            # one log line, no traceback (a sweep may meet a thousand receipts so)
            unsent = {"operationId": operation_id, "error": "Redis not answering"}
            logger.warning("operation.dispatch_failed", extra=unsent)
    except Exception:
        logger.exception("operation.dispatch_failed", extra={"operationId": operation_id})


def _dispatched(operation_id: str, task_id: str) -> None:
    from memory.tasks import process_operation

    # The hard limit travels with the job; a job killed by it reads as PROCESSING_INTERRUPTED.
    job_sent(process_operation, args=(operation_id,), task_id=task_id, time_limit=settings.PIPELINE_TIME_LIMIT_S)
    # A worker quick enough to have taken the job already recorded its id itself.
    Operation.objects.filter(pk=operation_id, task_id="").update(task_id=task_id)


def _dispatched_later(send: Callable[[], None]) -> None:
    try:
        send()
    finally:
        connection.close()  # on the redis-retry thread: no connection left open for the life of the process


def operations_requeue_unsent(*, older_than_s: int = 60) -> int:
    """Send the jobs of queued receipts with no job id: their dispatch failed (the queue was down when they were
    committed) or their sender died before the queue had the job. Receipts younger than `older_than_s` are left
    to their own on-commit dispatch. A job sent twice is harmless: the second delivery finds the receipt no longer
    queued."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    unsent = list(
        Operation.objects.filter(status=OperationStatus.QUEUED, task_id="", queued_at__lt=cutoff)
        .order_by("queued_at")
        .values_list("pk", flat=True)[:1000]
    )
    for operation_id in unsent:
        operation_dispatch(operation_id)
    if unsent:
        logger.info("operation.requeued", extra={"count": len(unsent)})
    return len(unsent)


def operation_restore_if_lost(operation: Operation) -> None:
    """A replayed request re-sends a job that never started: if the queue lost it, this restores it; if not,
    the duplicate finds the receipt no longer queued and does nothing."""
    if operation.status == OperationStatus.QUEUED:
        transaction.on_commit(lambda: operation_dispatch(operation.pk))


def operation_source_is_current(operation: Operation, source: Source) -> bool:
    """The source still exists as the version this receipt is about (not replaced, not erased)."""
    return source.tombstoned_at is None and source.version == operation.source_version


@dataclass(frozen=True)
class OperationView:
    """A receipt as clients read it: the stored row, or the read-only PROCESSING_INTERRUPTED projection."""

    operation: Operation
    status: str
    error_code: str
    error_message: str


def _job_state(task_id: str) -> str:
    from celery.result import AsyncResult

    from config.celery import app

    try:  # RedisAway at once while Redis is away: each read would wait out REDIS_TIMEOUT_S
        return str(asked_of_redis(lambda: AsyncResult(task_id, app=app).state))
    except Exception as exc:  # a Redis outage is an error, never a failed operation
        raise ServiceError("The processing queue cannot be inspected right now.", code="SERVICE_UNAVAILABLE") from exc


def runner_id() -> str:
    """Who runs a job: host and process id (the pool process, where the heartbeat lives)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _process_alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: leave it to the heartbeat
    return "\nState:\tZ" not in status  # a killed child not yet reaped is gone too


def operation_runner_gone(operation: Operation) -> bool:
    """A processing receipt nobody runs any more: its runner's process is gone (same host), or it has not
    touched its heartbeat for OPERATION_STALE_AFTER_S (any host)."""
    host, _, pid = operation.runner.rpartition(":")
    if host == socket.gethostname() and pid.isdigit() and not _process_alive(int(pid)):
        return True
    last = operation.heartbeat_at or operation.started_at
    return last is None or last < _heartbeat_cutoff()


def operations_with_live_runner() -> Q:
    """The heartbeat rule of `operation_runner_gone` as a filter: receipts whose heartbeat (or, before the first one,
    start) is under OPERATION_STALE_AFTER_S old."""
    cutoff = _heartbeat_cutoff()
    return Q(heartbeat_at__gte=cutoff) | Q(heartbeat_at__isnull=True, started_at__gte=cutoff)


def _heartbeat_cutoff() -> datetime:
    return timezone.now() - timedelta(seconds=settings.OPERATION_STALE_AFTER_S)


def _interrupted(operation: Operation) -> bool:
    if operation.status == OperationStatus.PROCESSING and operation_runner_gone(operation):
        return True
    return bool(
        operation.status in _OPEN and operation.task_id and _job_state(operation.task_id) in {"FAILURE", "REVOKED"}
    )


def operation_view(operation: Operation) -> OperationView:
    if _interrupted(operation):
        return OperationView(
            operation=operation,
            status=OperationStatus.FAILED,
            error_code="PROCESSING_INTERRUPTED",
            error_message="The processing job ended without finishing this receipt.",
        )
    return OperationView(
        operation=operation,
        status=operation.status,
        error_code=operation.error_code,
        error_message=operation.error_message,
    )


def operation_for_access(access: Access, operation_id: str, *, for_update: bool = False) -> Operation:
    operations = Operation.objects.select_related("source", "partition")
    operation: Operation = in_reach(
        access, operations, operation_id, noun="operation", id_field="operationId", for_update=for_update
    )
    return operation


@transaction.atomic
def operation_retry(*, access: Access, operation_id: str) -> Operation:
    """Queue a failed (or interrupted) operation again, if its source is still the version it processed."""
    access.require_scope(Scope.WRITE)
    operation = operation_for_access(access, operation_id, for_update=True)
    access.check_write(operation.partition)
    view = operation_view(operation)
    if view.status != OperationStatus.FAILED:
        raise Conflict(
            f"Only failed operations can be retried; this one is {view.status}.",
            details={"operationId": operation.pk, "status": view.status},
        )
    source = operation.source
    if source is None or not operation_source_is_current(operation, source):
        raise Conflict(
            "The source changed since this operation ran; ingest it again instead.",
            details={"operationId": operation.pk, "sourceVersion": operation.source_version},
        )
    operation.status = OperationStatus.QUEUED
    operation.error_code = operation.error_message = operation.step = operation.task_id = ""
    operation.save(update_fields=["status", "error_code", "error_message", "step", "task_id"])
    audit_record(
        actor=access.actor,
        owner=access.user,
        action="operation.retry",
        target=operation,
        partition=operation.partition,
        before={"status": view.status, "errorCode": view.error_code},
    )
    transaction.on_commit(lambda: operation_dispatch(operation.pk))
    return operation

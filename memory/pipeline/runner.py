"""Runs the steps of one Operation in order, recording progress on the receipt and pushing it live."""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.utils import timezone

from memory.models import Operation, OperationStatus
from memory.pipeline.progress import publish_progress
from memory.pipeline.steps import PIPELINE, Job, StepFailed
from memory.services.operations import operation_source_is_current

logger = logging.getLogger("memory.pipeline")

PROGRESS_INTERVAL_S = 0.5


def _claim(operation_id: str, task_id: str) -> Operation | None:
    """Move a queued receipt to processing; None if it is not queued (a duplicate or stale delivery).
    The receipt records the job that actually runs it, so the interruption projection asks about that job."""
    with transaction.atomic():
        operation = Operation.objects.select_for_update().filter(pk=operation_id).first()
        if operation is None or operation.status != OperationStatus.QUEUED:
            return None
        operation.status = OperationStatus.PROCESSING
        operation.started_at = timezone.now()
        operation.attempts += 1
        operation.steps_done = []
        operation.task_id = task_id or operation.task_id
        operation.save(update_fields=["status", "started_at", "attempts", "steps_done", "task_id"])
    return operation


def _finish(operation: Operation, status: str, code: str = "", message: str = "") -> None:
    operation.status, operation.error_code, operation.error_message = status, code, message
    operation.finished_at = timezone.now()
    operation.save(
        update_fields=["status", "error_code", "error_message", "finished_at", "step", "steps_done", "counts"]
    )
    publish_progress(operation)


def run_operation(operation_id: str, *, task_id: str = "") -> None:
    operation = _claim(operation_id, task_id)
    if operation is None:
        return
    publish_progress(operation)
    source = operation.source
    if source is None or not operation_source_is_current(operation, source):
        _finish(operation, OperationStatus.FAILED, "CONFLICT", "The source was replaced or erased before processing.")
        return
    job = Job(operation=operation, source=source)
    last_push = time.monotonic()
    for step in PIPELINE:
        # One write per step: it records the previous step as done and this one as running.
        operation.step = step.name
        operation.save(update_fields=["step", "steps_done", "counts"])
        if time.monotonic() - last_push >= PROGRESS_INTERVAL_S:  # live pushes, at most a few per second
            publish_progress(operation)
            last_push = time.monotonic()
        started = time.perf_counter()
        try:
            counts = step.run(job)
        except StepFailed as failure:
            _finish(operation, OperationStatus.FAILED, failure.code, failure.message)
            return
        except Exception:
            logger.exception("pipeline.step_crashed", extra={"operationId": operation.pk, "step": step.name})
            _finish(operation, OperationStatus.FAILED, "INTERNAL_ERROR", f"The {step.name} step failed unexpectedly.")
            return
        operation.steps_done = [
            *operation.steps_done,
            {"step": step.name, "ms": int((time.perf_counter() - started) * 1000)},
        ]
        operation.counts = {**operation.counts, **counts}
    _finish(operation, OperationStatus.COMPLETED)

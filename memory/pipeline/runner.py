"""Runs the steps of one Operation in order, recording progress on the receipt and pushing it live."""

from __future__ import annotations

import logging
import random
import threading
import time
from types import TracebackType

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from memory.connectivity import lost_a_lock_race
from memory.models import Operation, OperationStatus
from memory.pipeline.progress import publish_progress
from memory.pipeline.steps import PIPELINE, Job, Step, StepFailed
from memory.services.operations import operation_runner_gone, operation_source_is_current, runner_id

logger = logging.getLogger("memory.pipeline")

PROGRESS_INTERVAL_S = 0.5
STEP_ATTEMPTS = 4  # a step aborted to break a deadlock runs again (steps are idempotent; its transaction rolled back)


def _claim(operation_id: str, task_id: str) -> Operation | None:
    """Move a queued receipt to processing; None if there is nothing to run (a duplicate or stale delivery).

    The same job delivered again after its runner died (the queue gives back a job a lost worker never
    acknowledged) resumes the receipt, every step being idempotent, unless it has died OPERATION_MAX_ATTEMPTS
    times already: then the receipt ends failed instead of looping. The receipt records the job and the process
    running it, so the interruption projection can ask about them."""
    with transaction.atomic():
        # The source, its owner and partition come with the receipt: the steps read all three (three queries less).
        claimed = Operation.objects.select_for_update(of=("self",)).select_related("source__owner", "source__partition")
        operation = claimed.filter(pk=operation_id).first()
        if operation is None:
            return None
        resumed = (
            operation.status == OperationStatus.PROCESSING
            and bool(task_id)
            and operation.task_id == task_id
            and operation_runner_gone(operation)
        )
        if resumed and operation.attempts >= settings.OPERATION_MAX_ATTEMPTS:
            logger.error("pipeline.gave_up", extra={"operationId": operation.pk, "attempts": operation.attempts})
            _finish(
                operation,
                OperationStatus.FAILED,
                "PROCESSING_INTERRUPTED",
                f"The processing job died {operation.attempts} times; retry it once the cause is fixed.",
            )
            return None
        if not resumed and operation.status != OperationStatus.QUEUED:
            return None
        if resumed:
            logger.warning("pipeline.resumed", extra={"operationId": operation.pk, "attempts": operation.attempts})
        operation.status = OperationStatus.PROCESSING
        operation.started_at = operation.heartbeat_at = timezone.now()
        operation.attempts += 1
        operation.step, operation.steps_done = PIPELINE[0].name, []  # the first step's progress, in this write
        operation.task_id = task_id or operation.task_id
        operation.runner = runner_id()
        operation.save(
            update_fields=[
                "status",
                "started_at",
                "heartbeat_at",
                "attempts",
                "step",
                "steps_done",
                "task_id",
                "runner",
            ]
        )
    return operation


class _Heartbeat:
    """Touches the receipt every OPERATION_HEARTBEAT_S from a thread of its own while the job runs, so a reader
    can tell a long step from a dead worker."""

    def __init__(self, operation_id: str) -> None:
        self.operation_id = operation_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{operation_id}", daemon=True)

    def __enter__(self) -> None:
        self._thread.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        try:
            while not self._stop.wait(settings.OPERATION_HEARTBEAT_S):
                try:
                    Operation.objects.filter(pk=self.operation_id, status=OperationStatus.PROCESSING).update(
                        heartbeat_at=Now()
                    )
                except DatabaseError:  # the database is away for a moment: beat again next time
                    logger.warning("pipeline.heartbeat_failed", extra={"operationId": self.operation_id})
                    connection.close()
        finally:
            connection.close()  # this thread's own connection


def _finish(operation: Operation, status: str, code: str = "", message: str = "") -> None:
    operation.status, operation.error_code, operation.error_message = status, code, message
    operation.finished_at = timezone.now()
    operation.save(
        update_fields=["status", "error_code", "error_message", "finished_at", "step", "steps_done", "counts"]
    )
    publish_progress(operation)


def _run_step(step: Step, job: Job, operation_id: str) -> dict[str, int]:
    """Run one step; when PostgreSQL aborted it to break a deadlock with another job or a person's change
    (two writers that lock a source and a task in opposite orders), run it again after a short random pause."""
    for attempt in range(1, STEP_ATTEMPTS + 1):
        try:
            return step.run(job)
        except DatabaseError as exc:
            if not lost_a_lock_race(exc) or attempt == STEP_ATTEMPTS or connection.in_atomic_block:
                raise
            logger.warning(
                "pipeline.step_retried", extra={"operationId": operation_id, "step": step.name, "attempt": attempt}
            )
            time.sleep(random.uniform(0.05, 0.2) * attempt)  # noqa: S311 -- jitter, not security
    raise AssertionError("unreachable")


def run_operation(operation_id: str, *, task_id: str = "") -> None:
    operation = _claim(operation_id, task_id)
    if operation is None:
        return
    with _Heartbeat(operation.pk):
        _run_steps(operation)


def _run_steps(operation: Operation) -> None:
    publish_progress(operation)
    source = operation.source
    if source is None or not operation_source_is_current(operation, source):
        _finish(operation, OperationStatus.FAILED, "CONFLICT", "The source was replaced or erased before processing.")
        return
    job = Job(operation=operation, source=source)
    last_update = time.monotonic()  # the claim wrote the receipt with the first step, and it was pushed above
    for step in PIPELINE:
        operation.step = step.name
        # The receipt records the step running and those done when a step starts, at most a few times a second,
        # and the live push rides on the same beat: a job of a few hundred milliseconds wrote its receipt nine
        # times, up to 5 ms each on a loaded machine (docs/benchmarks.md, issue 18). _finish writes it all at the end.
        if time.monotonic() - last_update >= PROGRESS_INTERVAL_S:
            operation.save(update_fields=["step", "steps_done", "counts"])
            publish_progress(operation)
            last_update = time.monotonic()
        started = time.perf_counter()
        try:
            counts = _run_step(step, job, operation.pk)
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

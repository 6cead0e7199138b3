"""ToolEvents: one row per REST or MCP call (what, by which token, how it ended), never any content.

A row costs a committed INSERT (a WAL flush) of several milliseconds, more than the rest of a small call. So in
the web process (TOOL_EVENTS_DEFERRED) rows go to a bounded in-process queue that one background thread writes
in batches, every TOOL_EVENTS_FLUSH_S or TOOL_EVENTS_BATCH rows. Nothing is dropped for speed: a full queue
makes the caller write its row itself, and the queue is written out on a graceful shutdown (the ASGI lifespan's
shutdown in the web process, atexit elsewhere). Elsewhere (tests, commands) rows are written at once.

Calls older than TOOL_EVENTS_KEEP_DAYS are deleted once a day (`tool_events_prune`, beat), a batch a transaction.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memory.connectivity import outage_noted
from memory.errors import ERROR_KINDS, ValidationFailed
from memory.models import AccessToken, ToolEvent, User

if TYPE_CHECKING:
    from memory.access import Access

logger = logging.getLogger("memory.telemetry")


def outcome_for_status(status: int) -> str:
    if status >= 500:
        return ToolEvent.Outcome.SERVER_ERROR
    if status >= 400:
        return ToolEvent.Outcome.CLIENT_ERROR
    return ToolEvent.Outcome.OK


def tool_event_record(
    *,
    owner: User | None,
    token: AccessToken | None,
    surface: str,
    tool: str,
    partition_key: str,
    status: int,
    error_code: str,
    duration_ms: int,
    request_bytes: int,
    response_bytes: int,
) -> None:
    """Records the call; a failure here is logged, never raised: telemetry must not fail a call."""
    if outage_noted():  # the database is away: do not make the answer wait on the pool for a telemetry row
        return
    event = ToolEvent(
        owner=owner,
        token=token,
        surface=surface,
        tool=tool,
        partition_key=partition_key,
        status_code=status,
        outcome=outcome_for_status(status),
        error_code=error_code if error_code in ERROR_KINDS else "",
        duration_ms=duration_ms,
        request_bytes=request_bytes,
        response_bytes=response_bytes,
        created_at=timezone.now(),  # the time of the call, not of the batch that writes it
    )
    if settings.TOOL_EVENTS_DEFERRED:
        writer.add(event)
    else:
        _write([event])


def call_record(
    *,
    surface: str,
    tool: str,
    token: AccessToken | None,
    access: Access | None,
    status: int,
    error_code: str,
    started: float,
    request_bytes: int,
    response_bytes: int,
) -> None:
    """The row of a REST or MCP call: whose memory and which partition from its Access (else the token's owner),
    its duration from `started` (time.perf_counter())."""
    tool_event_record(
        owner=access.user if access else (token.owner if token else None),
        token=token,
        surface=surface,
        tool=tool,
        partition_key=access.partition.key if access and access.partition else "",
        status=status,
        error_code=error_code,
        duration_ms=int((time.perf_counter() - started) * 1000),
        request_bytes=request_bytes,
        response_bytes=response_bytes,
    )


def tool_events_flush() -> None:
    """Write every queued row now (graceful shutdown; tests)."""
    writer.flush()


def _write(events: list[ToolEvent]) -> None:
    try:
        with transaction.atomic():  # a savepoint inside a caller's transaction, so a failure leaves it usable
            ToolEvent.objects.bulk_create(events)
    except IntegrityError:
        # A token or user deleted since the call: one bad row must not take the batch with it.
        for event in events:
            _write_alone(event)
    except Exception:
        logger.exception("tool_event.write_failed", extra={"rows": len(events), "tool": events[0].tool})


def _write_alone(event: ToolEvent) -> None:
    try:
        with transaction.atomic():
            event.save(force_insert=True)
        return
    except IntegrityError:
        event.token = None  # the token was deleted: as its foreign key does (SET_NULL)
    try:
        with transaction.atomic():
            event.save(force_insert=True)
    except IntegrityError:  # the owner was erased, and their calls with them
        logger.info("tool_event.owner_gone", extra={"tool": event.tool})


class ToolEventWriter:
    """A bounded queue of rows and the one thread that writes them in batches (started by the first row)."""

    def __init__(self, *, capacity: int, batch: int, interval_s: float) -> None:
        self.capacity, self.batch, self.interval_s = capacity, batch, interval_s
        self._rows: deque[ToolEvent] = deque()
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # one writer at a time, so rows leave in order and only once
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, event: ToolEvent) -> None:
        with self._lock:
            full = len(self._rows) >= self.capacity
            if not full:
                self._rows.append(event)
                if len(self._rows) >= self.batch:
                    self._wake.set()
            if self._thread is None:
                self._start()
        if full:  # the database is slower than the calls: this caller pays for its own row, none is dropped
            _write([event])

    def pending(self) -> int:
        return len(self._rows)

    def flush(self) -> None:
        with self._flushing:
            while True:
                with self._lock:
                    batch = [self._rows.popleft() for _ in range(min(len(self._rows), self.batch))]
                if not batch:
                    break
                _write(batch)
            if not connection.in_atomic_block:
                connection.close()  # hand this thread's connection back (to the pool in the web process)

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tool-event-writer", daemon=True)
        self._thread.start()
        atexit.register(self.flush)  # processes without an ASGI lifespan (daphne, mcp_stdio)

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            try:
                if self._rows:
                    self.flush()
            except Exception:  # the writer must outlive anything one flush meets (rows are written or logged)
                logger.exception("tool_event.writer_failed")


writer = ToolEventWriter(
    capacity=settings.TOOL_EVENTS_QUEUE_MAX, batch=settings.TOOL_EVENTS_BATCH, interval_s=settings.TOOL_EVENTS_FLUSH_S
)


PRUNE_BATCH = 10_000  # rows a transaction: a delete never holds many row locks or one long transaction


@dataclass(frozen=True)
class CallLogPruning:
    keep_days: int  # 0: every call is kept
    cutoff: datetime | None  # calls before it are deleted
    deleted: int  # or, in a dry run, would be
    dry_run: bool

    def as_dict(self) -> dict[str, object]:
        cutoff = self.cutoff.isoformat() if self.cutoff else None
        return {"keepDays": self.keep_days, "cutoff": cutoff, "deleted": self.deleted, "dryRun": self.dry_run}


def tool_events_prune(
    *, keep_days: int | None = None, now: datetime | None = None, dry_run: bool = False, batch: int = PRUNE_BATCH
) -> CallLogPruning:
    """Delete the calls older than `keep_days` (TOOL_EVENTS_KEEP_DAYS unless given; 0 keeps them all), oldest first,
    `batch` rows a transaction. The old calls are the first ids (ids are given as rows are written), so they are
    walked by the primary key up to the first call of the kept period, never past it: the work is the rows
    deleted, not the log. A call written late (by a batch of the deferred writer) whose time is before the cutoff
    but whose id comes after that first kept call waits for a later run, whose walk reaches it."""
    keep = settings.TOOL_EVENTS_KEEP_DAYS if keep_days is None else keep_days
    if not 0 <= keep <= settings.TOOL_EVENTS_KEEP_DAYS_MAX:
        raise ValidationFailed(
            f"must be from 0 (keep every call) to {settings.TOOL_EVENTS_KEEP_DAYS_MAX}.", details={"keepDays": [keep]}
        )
    if keep == 0:
        return CallLogPruning(keep_days=keep, cutoff=None, deleted=0, dry_run=dry_run)
    cutoff = (now or timezone.now()) - timedelta(days=keep)
    old = ToolEvent.objects.filter(created_at__lt=cutoff).order_by("pk")
    first_kept = ToolEvent.objects.filter(created_at__gte=cutoff).order_by("pk").values_list("pk", flat=True).first()
    if first_kept is not None:
        old = old.filter(pk__lt=first_kept)
    deleted, last = 0, 0
    while ids := list(old.filter(pk__gt=last).values_list("pk", flat=True)[:batch]):
        if not dry_run:  # one DELETE of an id range, its own transaction
            old.filter(pk__gt=last, pk__lte=ids[-1]).delete()
        deleted, last = deleted + len(ids), ids[-1]
    result = CallLogPruning(keep_days=keep, cutoff=cutoff, deleted=deleted, dry_run=dry_run)
    logger.info("tool_events.pruned", extra=result.as_dict())
    return result

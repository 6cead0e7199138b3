"""The next queued job's chunk vectors, embedded while this job finishes.

A job's chunk step embeds its turns on every embedding thread; the steps after it (extraction, reconciliation, the
index, the receipt) are one thread of Python and PostgreSQL, and leave a core idle. Where the worker runs one job at
a time (`jobs_at_once`, noted by the worker as it starts: one pool process), the chunk step, once its own vectors
are made, hands this module its receipt: a thread of the pool process then finds the oldest other queued receipt,
makes that job's chunk texts as its chunk step will, and embeds them. That job's chunk step takes the vectors of the
very texts it needs and embeds only the rest; it waits for a read-ahead still running for it rather than embed the
same texts twice. A vector is a function of its text alone (each text runs alone in the dynamic form, and batches
are padded under the attention mask otherwise), so a vector made ahead is the one the job would make.

What is held is the vectors of one receipt's texts, in this process's memory only, never written: the next chunk
step takes it (whichever job it is), and it is dropped after KEEP_S without one. Reading ahead is left off where
several jobs run at once (the pool processes would read ahead the same receipt, and the cores are busy anyway) and
with PIPELINE_EMBED_AHEAD=0.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import close_old_connections, connection

if TYPE_CHECKING:
    from memory.models import Operation

logger = logging.getLogger("memory.pipeline")

KEEP_S = 60.0  # held vectors no chunk step took are dropped after this long
WAIT_S = 60.0  # the longest a chunk step waits for a read-ahead of its own texts
MOST_TEXTS = 256  # a document's first chunks only: the rest are embedded by its own job

# How many jobs this process's worker runs at once; None outside a worker (tests, scripts): no reading ahead.
jobs_at_once: int | None = None


@dataclass(frozen=True)
class _Held:
    operation_id: str
    model_id: str
    by_text: dict[str, list[float]]


class _Ahead:
    """One read-ahead at a time, on one thread of this process (made again in a forked child)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle = threading.Event()
        self.idle.set()
        self.reading: str | None = None  # the receipt being read ahead; "" while it is being chosen
        self.held: _Held | None = None
        self.requests: queue.Queue[str | None] = queue.Queue(maxsize=1)  # a receipt, or None: let go
        self.pid = os.getpid()
        threading.Thread(target=self._serve, name="embedding-ahead", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                after = self.requests.get(timeout=KEEP_S)
            except queue.Empty:  # idle for KEEP_S
                self._dropped()
                continue
            try:
                if after is None:
                    self._dropped()
                else:
                    self._read_ahead(after)
            finally:
                with self.lock:
                    self.reading = None
                self.idle.set()

    def _dropped(self) -> None:
        """What is held is dropped, and this thread's connection closed."""
        with self.lock:
            self.held = None
        connection.close()

    def _read_ahead(self, after: str) -> None:
        from memory.embeddings import EmbedderUnavailable, get_embedder

        try:
            close_old_connections()  # as before a job: a broken or aged connection is replaced
            operation = _next_queued(after)
            with self.lock:
                self.reading = operation.pk if operation is not None else None
            if operation is None:
                return
            texts = _chunk_texts(operation)[:MOST_TEXTS]
            if not texts:
                return
            embedder = get_embedder()
            vectors = embedder.embed_documents(texts)
            with self.lock:
                self.held = _Held(operation.pk, embedder.model_id, dict(zip(texts, vectors, strict=True)))
        except EmbedderUnavailable:
            return  # the job itself will find it unavailable, and say so
        except Exception:  # reading ahead is an optimisation: the job embeds what it must itself
            logger.exception("pipeline.embed_ahead_failed", extra={"after": after})

    def start(self, after: str) -> None:
        with self.lock:
            if not self.idle.is_set():
                return
            self.idle.clear()
            self.reading = ""
        self.requests.put_nowait(after)  # idle: the queue is empty

    def let_go(self) -> None:
        while True:
            self.idle.wait(WAIT_S)
            with self.lock:
                if self.idle.is_set():
                    self.idle.clear()
                    break
        self.requests.put(None)
        self.idle.wait(WAIT_S)

    def taken(self, operation_id: str) -> _Held | None:
        with self.lock:
            waits = self.reading in ("", operation_id)
        if waits:
            self.idle.wait(WAIT_S)
        with self.lock:
            held, self.held = self.held, None
        return held if held is not None and held.operation_id == operation_id else None


_ahead: _Ahead | None = None
_made = threading.Lock()


def _this_process() -> _Ahead:
    global _ahead
    with _made:
        if _ahead is None or _ahead.pid != os.getpid():
            _ahead = _Ahead()
        return _ahead


def reading_ahead() -> bool:
    return settings.PIPELINE_EMBED_AHEAD and jobs_at_once == 1


def embed_next_job(after: str) -> None:
    """Embed the next queued job's chunk texts on this process's read-ahead thread, unless it is busy (or reading
    ahead is off here). `after`: the receipt running now, never read ahead."""
    if reading_ahead():
        _this_process().start(after)


def vectors_ahead(operation_id: str, texts: list[str]) -> tuple[dict[str, list[float]], str]:
    """The vectors made ahead for this receipt's job, of these texts (whatever is held is dropped: taken once), and
    the model that made them; waits for a read-ahead of this job still running."""
    if _ahead is None or _ahead.pid != os.getpid():
        return {}, ""
    held = _ahead.taken(operation_id)
    if held is None:
        return {}, ""
    found = {text: held.by_text[text] for text in texts if text in held.by_text}
    if found:
        logger.info("pipeline.vectors_ahead", extra={"operationId": operation_id, "texts": len(found)})
    return found, held.model_id


def drained() -> None:
    """Waits until this process's read-ahead, if any, has ended."""
    if _ahead is not None and _ahead.pid == os.getpid():
        _ahead.idle.wait(WAIT_S)


def let_go() -> None:
    """Drops what is held and closes the read-ahead thread's connection, once a read-ahead running has ended (before
    a test database is dropped)."""
    if _ahead is not None and _ahead.pid == os.getpid():
        _ahead.let_go()


def _next_queued(after: str) -> Operation | None:
    from memory.models import Operation, OperationStatus
    from memory.services.operations import operation_source_is_current

    queued = Operation.objects.filter(status=OperationStatus.QUEUED, source__isnull=False).exclude(pk=after)
    operation = queued.select_related("source__owner", "source__partition").order_by("queued_at", "id").first()
    if operation is None or operation.source is None or not operation_source_is_current(operation, operation.source):
        return None
    return operation


def _chunk_texts(operation: Operation) -> list[str]:
    from memory.pipeline.steps import Job, chunk_texts

    assert operation.source is not None  # chosen with one
    return chunk_texts(Job(operation=operation, source=operation.source))

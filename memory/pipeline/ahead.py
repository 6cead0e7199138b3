"""The next queued job's chunk vectors, embedded while this job runs.

A job's chunk step embeds its turns on every embedding thread; the steps after it (storing, extraction,
reconciliation, the index, the receipt) are one thread of Python and PostgreSQL, and leave the embedding threads
idle. Where a worker runs one job at a time (`jobs_at_once`, noted as it starts: one pool process, or the solo pool)
and embeds with the local model, the chunk step, as it starts embedding its own texts, hands them to a thread of the
pool process. That thread finds the oldest queued receipt that was sent and is still current, makes that job's
chunk texts as its chunk step will, leaves out the running job's own, and embeds them (at most MOST_TEXTS): its
queries and drafts run while the job waits for its runs, and its runs queue behind the job's, so they go on while
the job stores, extracts and reconciles. The next chunk step takes the vectors of the very texts it needs and embeds
only the rest; it waits for a read-ahead still running for it rather than embed the same texts twice. A vector is a
function of its text alone (each text runs alone in the dynamic form, and batches are padded under the attention
mask otherwise), so a vector made ahead is the one the job would make.

Nothing is read ahead while another process runs a job (a second worker, or a second pool process: the receipt
read ahead would likely be theirs, and the cores are busy anyway), nor with PIPELINE_EMBED_AHEAD=0. What is held is
the vectors of one receipt's texts, in this process's memory only, never written: the next chunk step takes it
(whichever job it is), and it is dropped KEEP_S after it was made if none did.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import DatabaseError, connection

if TYPE_CHECKING:
    from memory.models import Operation

logger = logging.getLogger("memory.pipeline")

KEEP_S = 60.0  # held vectors no chunk step took are dropped this long after they were made
WAIT_S = 60.0  # the longest a chunk step waits for a read-ahead of its own texts
# A long document's first chunks only (its own job embeds the rest): the running job's later embeddings (its claims,
# its node cards) wait behind these runs on the embedding threads.
MOST_TEXTS = 64
CANDIDATES = 4  # queued receipts looked at, oldest first, for one still current

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
        # The texts of the job running (not read ahead again), or None: let go.
        self.requests: queue.Queue[frozenset[str] | None] = queue.Queue(maxsize=1)
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._serve, name="embedding-ahead", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                besides = self.requests.get(timeout=KEEP_S)
            except queue.Empty:  # nothing asked for KEEP_S (and nothing running: the state stays as it is)
                self._guarded(self._dropped)
                continue
            self._guarded(self._dropped if besides is None else partial(self._read_ahead, besides))
            with self.lock:
                self.reading = None
                self.idle.set()

    @staticmethod
    def _guarded(work: Callable[[], None]) -> None:
        try:
            work()
        except Exception:  # reading ahead is an optimisation: the job embeds what it must itself
            logger.exception("pipeline.embed_ahead_failed")

    def _dropped(self) -> None:
        """What is held is dropped, and this thread's connection closed."""
        with self.lock:
            self.held = None
        connection.close()

    def _read_ahead(self, besides: frozenset[str]) -> None:
        from memory.embeddings import EmbedderUnavailable, get_embedder

        try:
            operation = _next_queued()
            with self.lock:
                self.reading = operation.pk if operation is not None else None
            texts = [text for text in _chunk_texts(operation) if text not in besides] if operation else []
        except DatabaseError:
            connection.close()  # broken (the database restarted): a new one next time
            raise
        texts = texts[:MOST_TEXTS]
        if operation is None or not texts:
            return
        try:
            embedder = get_embedder()
            vectors = embedder.embed_documents(texts)
        except EmbedderUnavailable:
            return  # the job itself will find it unavailable, and say so
        with self.lock:
            self.held = _Held(operation.pk, embedder.model_id, dict(zip(texts, vectors, strict=True)))

    def start(self, besides: frozenset[str]) -> None:
        with self.lock:
            if not self.idle.is_set():
                return
            self.idle.clear()
            self.reading = ""
        self.requests.put_nowait(besides)  # idle: the queue is empty

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
    """This process's read-ahead, made on first use, and made again in a forked child or if its thread died."""
    global _ahead
    with _made:
        if _ahead is None or _ahead.pid != os.getpid() or not _ahead.thread.is_alive():
            _ahead = _Ahead()
        return _ahead


def _here() -> _Ahead | None:
    held = _ahead
    return held if held is not None and held.pid == os.getpid() and held.thread.is_alive() else None


def reading_ahead() -> bool:
    """Whether this process embeds the next job's texts ahead: a worker running one job at a time, with the local
    model (a remote endpoint would get a queued receipt's text before its job runs, and no core is idle for it)."""
    return settings.PIPELINE_EMBED_AHEAD and jobs_at_once == 1 and settings.EMBEDDER == "minilm"


def embed_next_job(besides: list[str]) -> None:
    """Embed the next queued job's chunk texts on this process's read-ahead thread, unless it is busy (or reading
    ahead is off here). `besides`: the texts of the job running, which it embeds now; they are never read ahead (the
    next receipt of the same conversation still has this job's turns to chunk, until this job stores them). Called
    as this job starts embedding, the read-ahead's queries and drafts run while this job waits for its runs, and
    its own runs queue behind this job's."""
    if reading_ahead():
        _this_process().start(frozenset(besides))


def vectors_ahead(operation_id: str, texts: list[str]) -> tuple[dict[str, list[float]], str]:
    """The vectors made ahead for this receipt's job of these texts, and their model, the active one (whatever is
    held is dropped: taken once); waits for a read-ahead of this job still running."""
    from memory.embeddings import EmbedderUnavailable, get_embedder

    here = _here()
    held = here.taken(operation_id) if here is not None else None
    if held is None:
        return {}, ""
    try:
        if held.model_id != get_embedder().model_id:
            return {}, ""
    except EmbedderUnavailable:
        return {}, ""
    found = {text: held.by_text[text] for text in texts if text in held.by_text}
    if found:
        logger.info("pipeline.vectors_ahead", extra={"operationId": operation_id, "texts": len(found)})
    return found, held.model_id


def held() -> tuple[str, list[str]] | None:
    """The receipt whose vectors this process holds, and their texts, once a read-ahead running has ended."""
    here = _here()
    if here is None:
        return None
    here.idle.wait(WAIT_S)
    with here.lock:
        return (here.held.operation_id, list(here.held.by_text)) if here.held is not None else None


def let_go() -> None:
    """Drops what is held and closes the read-ahead thread's connection, once a read-ahead running has ended (before
    a test database is dropped)."""
    here = _here()
    if here is not None:
        here.let_go()


def _next_queued() -> Operation | None:
    """The oldest queued receipt that was sent (one whose send failed waits for the requeue sweep) and is still about
    its source's current version, unless another process is running a job."""
    from django.db.models import Exists

    from memory.models import Operation, OperationStatus
    from memory.services.operations import operation_source_is_current, operations_with_live_runner, runner_id

    # A job whose runner died long ago (no heartbeat) runs nothing. One round trip: each costs this thread the GIL
    # back from the job's Python.
    running = Operation.objects.filter(operations_with_live_runner(), status=OperationStatus.PROCESSING)
    queued = (
        Operation.objects.filter(status=OperationStatus.QUEUED, source__isnull=False)
        .exclude(task_id="")
        .annotate(elsewhere=Exists(running.exclude(runner=runner_id())))
        .select_related("source__owner", "source__partition")
        .order_by("queued_at", "id")
    )
    for operation in queued[:CANDIDATES]:
        assert operation.source is not None  # chosen with one
        if operation.elsewhere:
            return None
        if operation_source_is_current(operation, operation.source):
            return operation
    return None


def _chunk_texts(operation: Operation) -> list[str]:
    from memory.pipeline.steps import Job, chunk_texts

    assert operation.source is not None  # chosen with one
    return chunk_texts(Job(operation=operation, source=operation.source))

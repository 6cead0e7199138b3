"""Celery tasks: a few lines each, taking ids."""

from __future__ import annotations

from contextlib import suppress

from celery import Task, shared_task

from memory.pipeline.runner import run_operation


@shared_task(
    name="memory.process_operation", bind=True, ignore_result=False, acks_late=True, reject_on_worker_lost=True
)
def process_operation(self: Task, operation_id: str) -> None:
    """Run the pipeline for one receipt. A job whose worker died goes back to the queue and resumes the receipt;
    one killed by the hard time limit is kept as FAILURE in the result backend for a day and reads as
    PROCESSING_INTERRUPTED (as does a receipt whose runner stopped beating)."""
    from memory.services.planner_statistics import planner_statistics_refresh

    run_operation(operation_id, task_id=self.request.id or "")
    planner_statistics_refresh()  # a large ingestion is searched at once: its tables need statistics now


@shared_task(name="memory.refresh_planner_statistics", ignore_result=True)
def refresh_planner_statistics() -> list[str]:
    """The same check a worker makes after each job (Celery beat, every 30 s): what the last jobs of an ingestion
    changed, left by that check because the table had been analysed a moment before, is analysed here."""
    from memory.services.planner_statistics import planner_statistics_refresh

    return planner_statistics_refresh()


@shared_task(name="memory.maintain_claims")
def maintain_claims() -> dict[str, int]:
    """Expire claims whose time is up and flag old inferred claims for reverification (Celery beat)."""
    from memory.services.lifecycle import run_maintenance

    return run_maintenance().as_dict()


@shared_task(name="memory.prune_call_log", ignore_result=True)
def prune_call_log() -> dict[str, object]:
    """Delete the calls older than TOOL_EVENTS_KEEP_DAYS (Celery beat, once a day)."""
    from memory.services.telemetry import tool_events_prune

    return tool_events_prune().as_dict()


@shared_task(name="memory.flush_access")
def flush_access() -> int:
    """Write the access counts searches noted in Redis into the claims (Celery beat, every minute)."""
    from memory.recall.bookkeeping import flush_access as flush

    return flush()


@shared_task(name="memory.embed_pending_vectors", ignore_result=True)
def embed_pending_vectors(owner_id: int) -> None:
    """Vectors for claims and nodes written through the API."""
    from memory.embeddings import EmbedderUnavailable, get_embedder
    from memory.services.embeddings import embed_pending

    # If it is unavailable the rows stay findable by keyword, and the next write tries again.
    with suppress(EmbedderUnavailable):
        embed_pending(owner_id, get_embedder())


@shared_task(name="memory.embed_chunks", ignore_result=True)
def embed_chunks(chunk_ids: list[str]) -> None:
    """Vectors for chunks an erasure left without one (the turns after an erased message)."""
    from memory.embeddings import EmbedderUnavailable, get_embedder
    from memory.services.embeddings import chunks_embed_missing

    with suppress(EmbedderUnavailable):  # the sweep makes them once it is back; keyword search finds them meanwhile
        chunks_embed_missing(chunk_ids, get_embedder())


@shared_task(name="memory.sweep_missing_vectors", ignore_result=True)
def sweep_missing_vectors() -> dict[str, int]:
    """Vectors for claims, nodes and chunks that lack one of the active model (Celery beat)."""
    from memory.embeddings import EmbedderUnavailable, get_embedder
    from memory.services.embeddings import vectors_sweep

    try:
        return vectors_sweep(get_embedder())
    except EmbedderUnavailable:  # keyword search still finds the rows; the next sweep tries again
        return {"claims": 0, "nodes": 0, "chunks": 0}


@shared_task(name="memory.settle_redis_debts", ignore_result=True)
def settle_redis_debts() -> int:
    """Writes owed to Redis by processes that could not do them, a killed one's too (Celery beat)."""
    from memory.services.redis_debts import debts_settled

    return debts_settled()


@shared_task(name="memory.requeue_unsent_operations", ignore_result=True)
def requeue_unsent_operations() -> int:
    """Send the jobs of receipts whose dispatch failed while the queue was down (Celery beat)."""
    from memory.services.operations import operations_requeue_unsent

    return operations_requeue_unsent()

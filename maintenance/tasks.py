"""Celery tasks of maintenance: a few lines each."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="maintenance.reap", ignore_result=True)
def reap_claims() -> dict[str, int]:
    """Reap every user's unimportant, long-unread claims (Celery beat, every REAP_INTERVAL_HOURS)."""
    from maintenance.reaping import reap_everyone

    return reap_everyone()

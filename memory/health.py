"""GET /healthz: database, Redis, a Celery worker and migrations, without credentials or content."""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from config.cache import redis_answers, redis_watched

logger = logging.getLogger("memory.health")

_migrations_current = False  # once current, a running process never goes back to pending


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except DatabaseError:
        return "error"


def _redis() -> str:
    # While a watcher thread of this process waits for Redis to answer, it asks every second: a probe answers at once
    # from it rather than wait REDIS_TIMEOUT_S for the same silence (and sees Redis back a second late at most).
    # Otherwise (no watcher, or one that died) asked, even while this process leaves Redis alone for a moment after a
    # call it did not answer (config.cache.redis_away): an answer ends that wait at once.
    if redis_watched():
        return "error"
    try:
        return "ok" if redis_answers() else "error"
    except Exception:
        return "error"


def _worker() -> str:
    from config.celery import app

    try:
        replies = app.control.ping(timeout=0.5, limit=1)
    except Exception:
        return "absent"
    return "ok" if replies else "absent"


def _migrations() -> str:
    global _migrations_current
    if _migrations_current:
        return "current"
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    _migrations_current = not pending
    return "current" if _migrations_current else "pending"


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    db = _database()
    redis = _redis()
    body = {
        "status": "ok" if db == "ok" and redis == "ok" else "error",
        "db": db,
        "redis": redis,
        "worker": _worker() if redis == "ok" else "absent",
        "migrations": _migrations() if db == "ok" else "unknown",
    }
    return JsonResponse(body, status=200 if body["status"] == "ok" else 503)

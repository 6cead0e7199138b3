"""`migrate` with progress logs (SPEC §3) and a PostgreSQL advisory lock so concurrent starts queue up.

Logs `database.migrations.started`, `database.migrations.progress` every 10 s (phase `connecting`,
`waiting_for_lock` or `applying`, `elapsedMs`, `statementsStarted`, `migrationsApplied`), then
`database.migrations.completed` or `database.migrations.failed`. Never SQL, connection strings or content.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.core.management.commands import migrate
from django.db import connections

logger = logging.getLogger("memory.migrations")

ADVISORY_LOCK_KEY = 727_100_001  # arbitrary, fixed: one migration run at a time per database
PROGRESS_INTERVAL_S = 10.0
LOCK_POLL_S = 0.2


class MigrationProgress:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.phase = "connecting"
        self.statements = 0
        self.applied = 0
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="migration-progress", daemon=True)

    def fields(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "elapsedMs": int((time.monotonic() - self.started) * 1000),
            "statementsStarted": self.statements,
            "migrationsApplied": self.applied,
        }

    def start(self) -> None:
        logger.info("database.migrations.started")
        self._ticker.start()

    def stop(self) -> None:
        self._stop.set()

    def _tick(self) -> None:
        while not self._stop.wait(PROGRESS_INTERVAL_S):
            logger.info("database.migrations.progress", extra=self.fields())

    def count_statement(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        self.statements += 1
        return execute(sql, params, many, context)


def migration_lock_taken(connection: Any) -> None:
    """Returns once this connection holds the migration lock (session level; the caller unlocks).

    Polls rather than blocking in `pg_advisory_lock`: a session blocked there is a transaction in progress, and a
    migration building an index CONCURRENTLY waits for every such transaction, so the holder would wait for the
    waiter that waits for it (two web processes started together deadlocked on 0023). Idle between polls, a
    waiting start holds nothing the holder's statements wait for.
    """
    while True:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [ADVISORY_LOCK_KEY])
            if cursor.fetchone()[0]:
                return
        time.sleep(LOCK_POLL_S)


class Command(migrate.Command):
    progress: MigrationProgress | None = None

    def handle(self, *args: Any, **options: Any) -> None:
        connection = connections[options["database"]]
        progress = self.progress = MigrationProgress()
        progress.start()
        try:
            connection.ensure_connection()
            progress.phase = "waiting_for_lock"
            migration_lock_taken(connection)
            try:
                progress.phase = "applying"
                with connection.execute_wrapper(progress.count_statement):
                    super().handle(*args, **options)
            finally:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_LOCK_KEY])
        except BaseException as exc:
            logger.error("database.migrations.failed", extra={**progress.fields(), "error": type(exc).__name__})
            raise
        finally:
            progress.stop()
        logger.info("database.migrations.completed", extra=progress.fields())

    def migration_progress_callback(self, action: str, migration: Any = None, fake: bool = False) -> None:
        super().migration_progress_callback(action, migration, fake)
        if action == "apply_success" and self.progress is not None:
            self.progress.applied += 1

"""Concurrent starts queue for the migration lock without blocking the migration that holds it.

A migration may build an index CONCURRENTLY (0023), which waits for every transaction older than its own. A
start blocked inside `pg_advisory_lock` is such a transaction while the holder waits for it: two web processes
started together deadlocked on 0023 (`make drill`). Waiters poll instead and are idle between polls.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from memory.management.commands.migrate import ADVISORY_LOCK_KEY, migration_lock_taken

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_start_waiting_for_the_lock_does_not_block_an_index_built_concurrently() -> None:
    holder = connections.create_connection("default")
    holder.set_autocommit(True)
    waited: list[bool] = []
    try:
        with holder.cursor() as cursor:
            cursor.execute("CREATE TABLE lock_probe (n integer)")
            cursor.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_LOCK_KEY])

        def wait_for_the_lock() -> None:
            waiter = connections["default"]
            try:
                migration_lock_taken(waiter)
                waited.append(True)
                with waiter.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_LOCK_KEY])
            finally:
                waiter.close()

        waiting = threading.Thread(target=wait_for_the_lock)
        waiting.start()
        with holder.cursor() as cursor:
            for _ in range(200):  # until the other start has asked for the lock at least once
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND pid <> pg_backend_pid() AND query LIKE %s",
                    ["%advisory_lock%"],
                )
                if cursor.fetchone()[0]:
                    break
                time.sleep(0.05)
            else:
                pytest.fail("the waiting start never asked for the lock")
            # The bound only turns a deadlock into an error; the index itself takes milliseconds.
            cursor.execute("SET statement_timeout = '15s'")
            cursor.execute("CREATE INDEX CONCURRENTLY lock_probe_n ON lock_probe (n)")
            cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'lock_probe_n'")
            assert cursor.fetchone()[0] == 1
            assert waited == []  # still waiting: the holder has not let go
            cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_LOCK_KEY])
        waiting.join(timeout=30)
        assert waited == [True]
    finally:
        with holder.cursor() as cursor:
            cursor.execute("RESET statement_timeout")
            cursor.execute("SELECT pg_advisory_unlock_all()")
            cursor.execute("DROP TABLE IF EXISTS lock_probe")
        holder.close()

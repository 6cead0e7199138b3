"""Deterministic races on real PostgreSQL connections: one transaction holds its locks until another
connection is seen waiting for a lock (or has finished without waiting, which is what a missing lock looks
like), then both complete. The polling is a sync aid, never a timing assertion."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.db import connection, transaction


def wait_until_blocked(timeout_s: float = 10.0) -> bool:
    """Whether another backend of this database waits for a lock within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return True
            time.sleep(0.01)
    return False


def race(
    holder: Callable[[], object],
    contender: Callable[[], object],
    *,
    then: Callable[[], object] | None = None,
    wait_s: float = 3.0,
    allowed: tuple[type[BaseException], ...] = (),
) -> list[BaseException]:
    """`holder` runs in a transaction that stays open until `contender`, on another connection, waits for a
    lock (at most `wait_s`); then the holder runs `then` in the same transaction, commits, and both finish.
    Exceptions of either fail the test unless they are `allowed`; those are returned."""
    errors: list[BaseException] = []
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                holder()
                held.set()
                release.wait(30)
                if then is not None:
                    then()
        except BaseException as exc:
            errors.append(exc)
        finally:
            held.set()
            connection.close()

    def contend() -> None:
        try:
            contender()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    first = threading.Thread(target=hold)
    first.start()
    assert held.wait(30)
    second = threading.Thread(target=contend)
    second.start()
    wait_until_blocked(timeout_s=wait_s)
    release.set()
    first.join(30)
    second.join(30)
    assert all(isinstance(error, allowed) for error in errors), errors
    return errors

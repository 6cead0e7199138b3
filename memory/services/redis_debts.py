"""Writes owed to Redis, written down in PostgreSQL: a memory version to move on, an erasure's cached views to drop,
the credentials' generation to replace. A process tries its own again until Redis answers (config.redis_retry); one
killed outright before then would leave those caches to live out their length (the atlas a day, a revoked token
CACHE_MAX_AGE_S in the other processes). Written down, they are done by whichever process settles next: a web process
shortly after it starts, any process as soon as it hears Redis answer again after an outage, beat every minute
(`memory.settle_redis_debts`).

A row stands for every piece of its kind and owner recorded until its `mark`, the next value of a sequence taken as
the row is written, which is after the commit the piece follows (or before it, for the credentials' first try inside
the transaction: its try after the commit is recorded again). `debts_settled` takes a mark first and deletes only rows
marked before it: the work it does after comes after their commits, and a row written again meanwhile stays for the
next settling. The process that owed a piece leaves its row to the settling, its own work done or not (done twice,
the work costs a cache miss). What is lost: a piece whose process is killed in the few milliseconds before its row is
written, or whose row cannot be written (`redis_debts.not_recorded`: the database away too, its pool exhausted).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Hashable

from django.db import DatabaseError, connection
from redis.exceptions import RedisError

from config.redis_retry import keep_ledger
from memory.models import RedisDebt, RedisDebtKind
from memory.recall.threads import drained, process_pool, submitted

logger = logging.getLogger("memory.redis_debts")

LEDGER = "redis-ledger"  # the thread that writes them down, off the caller's thread and transaction
SETTLING = "redis-settling"  # the thread that settles them when this process hears Redis again
# One settling at a time among all processes (a session's advisory lock): after an outage every process hears Redis
# at once, and an erased owner's views cost two SCANs of the keyspace each. One that finds it held does nothing.
_SETTLING_LOCK = 0x6D656D6F72795F72  # any bigint of this service's own
_KINDS = frozenset(RedisDebtKind.values)
_RECORDED = """
    INSERT INTO memory_redisdebt AS debt (kind, owner_id, mark, recorded_at)
    VALUES (%s, %s, nextval('memory_redisdebt_mark'), clock_timestamp())
    ON CONFLICT (kind, owner_id) DO UPDATE
    SET mark = GREATEST(debt.mark, EXCLUDED.mark), recorded_at = GREATEST(debt.recorded_at, EXCLUDED.recorded_at)
"""

Debt = tuple[str, int]  # (kind, owner id; 0 for none)
_waiting: set[Debt] = set()  # handed to the ledger thread and not written yet: written once for every call before
_lock = threading.Lock()


def _forked() -> None:
    global _lock
    _waiting.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forked)


def debt_recorded(*, kind: str, owner_id: int = 0) -> None:
    """The piece of work `kind` for `owner_id` is owed to Redis from now (this thread's connection)."""
    with connection.cursor() as cursor:
        cursor.execute(_RECORDED, [RedisDebtKind(kind).value, owner_id])  # an unknown kind: ValueError


class Ledger:
    """config.redis_retry's pieces of the kinds above, written down by the LEDGER thread (`ledger_installed`)."""

    def recorded(self, key: Hashable) -> None:
        debt = _debt_of(key)
        if debt is None:
            return
        with _lock:
            if debt in _waiting:
                return  # its write has not started: it records this call too
            _waiting.add(debt)
        try:
            process_pool(LEDGER, 1).submit(_written_down, debt)
        except RuntimeError:  # the interpreter is shutting down: no new thread
            if connection.in_atomic_block:  # the caller's transaction would take the row with it, or break on it
                _not_recorded(debt, "the interpreter is shutting down inside a transaction")
            else:
                _written_down(debt, own_thread=False)

    def written(self) -> None:
        drained(LEDGER)

    def answered(self) -> None:
        submitted(SETTLING, 1, debts_settled_here, drops_logged=False)  # one waiting or running does for this call too


def ledger_installed() -> None:
    """Pieces owed to Redis are written down from now (the app's `ready`)."""
    keep_ledger(Ledger())


def _debt_of(key: Hashable) -> Debt | None:
    if not isinstance(key, tuple) or not key or key[0] not in _KINDS:
        return None  # a job not sent: beat's sweeps send it
    return key[0], int(key[1]) if len(key) > 1 else 0


def _written_down(debt: Debt, own_thread: bool = True) -> None:
    with _lock:
        _waiting.discard(debt)  # from now a new call is written again, after this write
    try:
        debt_recorded(kind=debt[0], owner_id=debt[1])
    except DatabaseError as error:  # the database away too: this process's own tries are all there is
        _not_recorded(debt, str(error))
    except Exception:  # nothing waits for this thread's result: said here or never
        logger.exception("redis_debts.not_recorded", extra={"kind": debt[0], "ownerId": debt[1]})
    finally:
        if own_thread:
            connection.close()  # no connection held for the life of the process (the web's goes back to its pool)


def debts_settled_here() -> int:
    """`debts_settled` on a thread of the process's own (a web's start-up, hearing Redis again), its connection closed
    after; what fails is logged (nothing waits for the thread's result; beat settles them in a minute)."""
    try:
        return debts_settled()
    except Exception:
        logger.exception("redis_debts.not_settled")
        return 0
    finally:
        connection.close()


def _not_recorded(debt: Debt, error: str) -> None:
    logger.error("redis_debts.not_recorded", extra={"kind": debt[0], "ownerId": debt[1], "error": error})


def debts_settled() -> int:
    """Every piece written down before now done, and its row deleted; how many (kind, owner) were settled. Stops at
    the first that Redis does not take: the next settling goes on. 0 while another process settles."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s), nextval('memory_redisdebt_mark')", [_SETTLING_LOCK])
        held, now = cursor.fetchone()
    if not held:
        return 0  # what the other leaves (written down after it began), the next settling takes
    try:
        return _settled_before(now)
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_SETTLING_LOCK])
        except DatabaseError:  # a broken connection: closed, so that no pool lends it on with the lock
            connection.close()


def _settled_before(now: int) -> int:
    owed = list(RedisDebt.objects.filter(mark__lt=now).values_list("kind", "owner_id"))
    settled = 0
    for kind, owner_id in owed:
        try:
            _done(kind, owner_id)
        except RedisError as error:
            logger.warning("redis_debts.unsettled", extra={"left": len(owed) - settled, "error": type(error).__name__})
            break
        RedisDebt.objects.filter(kind=kind, owner_id=owner_id, mark__lt=now).delete()
        settled += 1
    if settled:
        logger.info("redis_debts.settled", extra={"settled": settled})
    return settled


def _done(kind: str, owner_id: int) -> None:
    from memory.credentials import generation_moved_on
    from memory.recall.caching import views_dropped_late
    from memory.services.audit import memory_version_settled

    if kind == RedisDebtKind.MEMORY_VERSION:
        memory_version_settled(owner_id)
    elif kind == RedisDebtKind.ERASED_VIEWS:
        views_dropped_late(owner_id)
    elif kind == RedisDebtKind.CREDENTIALS_GENERATION:
        generation_moved_on()

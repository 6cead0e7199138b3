"""Writes owed to Redis written down in PostgreSQL, and settled by another process (memory.services.redis_debts).
A server killed outright while it owed them, over real HTTP, is in tests/test_outages.py."""

from __future__ import annotations

import logging
import threading
import time

import pytest
import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from config import redis_retry
from memory import credentials
from memory.models import RedisDebt, RedisDebtKind, User
from memory.recall.caching import dropped_key, owner_key
from memory.recall.threads import drained, process_pool
from memory.services import redis_debts
from memory.services.audit import memory_changed, memory_version_key
from memory.services.redis_debts import LEDGER, SETTLING, Ledger, debt_recorded, debts_settled
from memory.tasks import settle_redis_debts
from tests.conftest import owed_settled, redis_left_alone
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)  # the ledger's thread writes on a connection of its own


@pytest.fixture(autouse=True)
def ledger(monkeypatch: pytest.MonkeyPatch) -> None:
    """Written down, as in every process of the service (off in the rest of the suite: tests/conftest.py)."""
    monkeypatch.setattr(redis_retry, "_ledger", Ledger())


def owed() -> list[tuple[str, int]]:
    drained(SETTLING)
    drained(LEDGER)
    return sorted(RedisDebt.objects.values_list("kind", "owner_id"))


def test_a_memory_change_that_meets_redis_away_is_written_down_once_per_owner(
    alice: User, bob: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    redis_left_alone(monkeypatch)
    for owner in (alice, alice, bob):
        with transaction.atomic():
            memory_changed(owner.pk)
    assert owed() == sorted([("memory-version", alice.pk), ("memory-version", bob.pk)])
    first = RedisDebt.objects.get(owner_id=alice.pk).mark
    with transaction.atomic():
        memory_changed(alice.pk)
    assert owed() == sorted([("memory-version", alice.pk), ("memory-version", bob.pk)])
    assert RedisDebt.objects.get(owner_id=alice.pk).mark > first  # stands for the later change too


def test_calls_while_a_write_waits_are_written_once_and_a_call_during_it_once_more(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, proceed = threading.Event(), threading.Event()
    marks: list[int] = []
    recorded = redis_debts.debt_recorded

    def slow(*, kind: str, owner_id: int = 0) -> None:
        if not marks:
            started.set()
            assert proceed.wait(10)
        recorded(kind=kind, owner_id=owner_id)
        marks.append(RedisDebt.objects.get(kind=kind, owner_id=owner_id).mark)

    monkeypatch.setattr(redis_debts, "debt_recorded", slow)
    gate = threading.Event()
    process_pool(LEDGER, 1).submit(gate.wait, 10)  # the ledger's thread busy: both calls below wait for one write
    key = (RedisDebtKind.MEMORY_VERSION, alice.pk)
    redis_debts.Ledger().recorded(key)
    redis_debts.Ledger().recorded(key)
    gate.set()
    assert started.wait(10)
    redis_debts.Ledger().recorded(key)  # its write has started (its mark maybe taken): this one needs another
    proceed.set()
    assert owed() == [("memory-version", alice.pk)]
    assert len(marks) == 2 and marks[1] > marks[0]


def test_a_credentials_change_that_meets_redis_away_is_written_down_for_every_owner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redis_left_alone(monkeypatch)
    credentials._bump()
    assert owed() == [("credentials-generation", 0)]


def test_a_kind_that_is_not_owed_is_refused_and_nothing_is_written(alice: User) -> None:
    with pytest.raises(ValueError, match="'job' is not a valid RedisDebtKind"):
        debt_recorded(kind="job", owner_id=alice.pk)
    assert owed() == []


def test_a_job_not_sent_is_not_written_down(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 60)  # still owed when the ledger is read
    redis_retry.retried(("operation", "op_1"), lambda: None)
    redis_retry.retried(("job", "memory.embed", "()"), lambda: None)
    assert owed() == []  # beat's sweeps send them
    redis_retry._tried_now()  # sent now (into nothing): the next test owes none of them


def test_what_was_written_down_is_done_by_the_settling_and_its_rows_deleted(alice: User, bob: User) -> None:
    gone = UserFactory.create()
    gone_id = gone.pk
    gone.delete()  # an account erased while Redis was away: its version key is deleted, not moved on
    cache.set(memory_version_key(alice.pk), 5, timeout=None)
    cache.set(memory_version_key(gone_id), 9, timeout=None)
    cache.set(owner_key("speakers", bob.pk), ["Bob"], 3600)
    other_process = redis.Redis.from_url(settings.REDIS_URL)  # reads the generation as another process would
    generation = other_process.get(credentials.GENERATION_KEY)
    for kind, owner_id in [
        (RedisDebtKind.MEMORY_VERSION, alice.pk),
        (RedisDebtKind.MEMORY_VERSION, gone_id),
        (RedisDebtKind.ERASED_VIEWS, bob.pk),
        (RedisDebtKind.CREDENTIALS_GENERATION, 0),
    ]:
        debt_recorded(kind=kind, owner_id=owner_id)

    assert settle_redis_debts() == 4  # beat's task
    assert cache.get(memory_version_key(alice.pk)) == 6
    assert cache.get(memory_version_key(gone_id)) is None
    assert cache.get(owner_key("speakers", bob.pk)) is None and cache.get(dropped_key(bob.pk)) is not None
    assert other_process.get(credentials.GENERATION_KEY) != generation
    other_process.close()
    assert owed() == []
    assert debts_settled() == 0


def test_a_process_that_hears_redis_again_settles_what_a_killed_one_wrote_down(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from config import cache as shared

    cache.set(memory_version_key(alice.pk), 3, timeout=None)
    debt_recorded(kind=RedisDebtKind.MEMORY_VERSION, owner_id=alice.pk)  # by a process killed since
    redis_left_alone(monkeypatch)
    shared.redis_heard()  # as this process's watcher does when Redis answers a PING
    assert owed() == []
    assert cache.get(memory_version_key(alice.pk)) == 4


def test_a_row_written_again_while_it_is_settled_stays_for_the_next_settling(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    debt_recorded(kind=RedisDebtKind.MEMORY_VERSION, owner_id=alice.pk)
    done = redis_debts._done

    def done_while_another_process_records_it_again(kind: str, owner_id: int) -> None:
        done(kind, owner_id)
        debt_recorded(kind=kind, owner_id=owner_id)  # a change of theirs committed after the work: not covered by it

    monkeypatch.setattr(redis_debts, "_done", done_while_another_process_records_it_again)
    assert debts_settled() == 1
    assert owed() == [("memory-version", alice.pk)]
    monkeypatch.setattr(redis_debts, "_done", done)
    assert debts_settled() == 1
    assert owed() == []


def backend_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            if cursor.fetchone() == (0,):
                return
            assert time.monotonic() < deadline, f"backend {pid} still there"
            time.sleep(0.01)


def test_while_another_process_settles_a_settling_does_nothing(alice: User) -> None:
    import psycopg

    debt_recorded(kind=RedisDebtKind.MEMORY_VERSION, owner_id=alice.pk)
    cache.set(memory_version_key(alice.pk), 1, timeout=None)
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other_process:
        other_process.execute("SELECT pg_advisory_lock(%s)", [redis_debts._SETTLING_LOCK])
        pid = other_process.info.backend_pid
        assert debts_settled() == 0
        assert owed() == [("memory-version", alice.pk)] and cache.get(memory_version_key(alice.pk)) == 1
    backend_gone(pid)  # the server ends a closed session's backend a moment later, and its locks with it
    assert debts_settled() == 1
    assert owed() == [] and cache.get(memory_version_key(alice.pk)) == 2


def test_settling_while_redis_is_away_leaves_every_row_and_says_so(
    alice: User, bob: User, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    debt_recorded(kind=RedisDebtKind.MEMORY_VERSION, owner_id=alice.pk)
    debt_recorded(kind=RedisDebtKind.ERASED_VIEWS, owner_id=bob.pk)
    redis_left_alone(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="memory.redis_debts"):
        assert debts_settled() == 0
    assert owed() == sorted([("memory-version", alice.pk), ("erased-views", bob.pk)])
    assert [record.msg for record in caplog.records] == ["redis_debts.unsettled"]
    assert caplog.records[0].left == 2  # type: ignore[attr-defined]


def test_a_process_s_own_retry_leaves_its_row_to_the_settling(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    redis_left_alone(monkeypatch, seconds=0.2)
    with transaction.atomic():
        memory_changed(alice.pk)
    owed_settled(timeout=10)  # this process moved the version on once Redis answered
    assert redis_retry.owed() == 0
    assert owed() == [("memory-version", alice.pk)]
    assert debts_settled() == 1 and owed() == []


def test_the_database_away_as_well_is_logged_and_the_process_still_retries(
    alice: User, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from django.db import OperationalError

    def refused(*, kind: str, owner_id: int = 0) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(redis_debts, "debt_recorded", refused)
    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 60)
    with caplog.at_level(logging.ERROR, logger="memory.redis_debts"):
        redis_retry.retried(("erased-views", alice.pk), lambda: None)
        assert owed() == []
    assert [record.msg for record in caplog.records] == ["redis_debts.not_recorded"]
    assert redis_retry.owed() == 1
    redis_retry._tried_now()

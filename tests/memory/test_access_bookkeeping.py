"""Access counts survive a failed flush (issue 12, item 6): the counts taken out of the pending hash are
flushed again next time instead of being overwritten by the next batch."""

from __future__ import annotations

import logging
import threading

import pytest
from django.db import OperationalError, connection, transaction

from memory.recall.bookkeeping import FLUSHING, PENDING, _client, flush_access, note_access
from tests.factories import ClaimFactory


@pytest.mark.django_db(transaction=True)
def test_counts_of_a_failed_flush_are_not_lost(alice) -> None:
    claim = ClaimFactory.create(owner=alice, statement="Prefers tea.")
    _client().delete(PENDING, FLUSHING)
    note_access([claim.pk, claim.pk])

    locked, release = threading.Event(), threading.Event()

    def hold_the_row() -> None:
        try:
            with transaction.atomic():
                list(type(claim).objects.select_for_update().filter(pk=claim.pk))
                locked.set()
                release.wait(30)
        finally:
            locked.set()
            connection.close()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    assert locked.wait(30)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '200ms'")
    try:
        with pytest.raises(OperationalError):
            flush_access()  # the UPDATE cannot get the row: this flush fails
    finally:
        release.set()
        holder.join(30)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = 0")

    note_access([claim.pk])  # a search after the failure
    flush_access()
    flush_access()
    claim.refresh_from_db()
    assert claim.access_count == 3
    assert claim.last_accessed_at is not None


@pytest.mark.django_db
def test_a_flush_while_another_runs_does_nothing(alice) -> None:
    from memory.recall.bookkeeping import FLUSH_LOCK

    claim = ClaimFactory.create(owner=alice, statement="Prefers tea.")
    _client().delete(PENDING, FLUSHING, FLUSH_LOCK)
    note_access([claim.pk])
    _client().set(FLUSH_LOCK, "1")  # another flush is under way
    try:
        assert flush_access() == 0
    finally:
        _client().delete(FLUSH_LOCK)
    assert flush_access() == 1
    claim.refresh_from_db()
    assert claim.access_count == 1


def test_while_redis_is_away_an_access_is_dropped_at_once_not_sent(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The sender uses the process's client (config.cache.redis_client): a Redis that did not answer a moment ago is
    not asked for an access count (it would hold the sender its socket timeout, count after count)."""
    from config import cache as shared
    from memory.recall.bookkeeping import SENDER
    from memory.recall.threads import drained

    _client().delete(PENDING)
    monkeypatch.setattr(shared, "_away_until", 0.0)
    shared.noted_away()
    with caplog.at_level(logging.INFO, logger="memory.recall"):
        note_access(["clm_away"])
        drained(SENDER)
    monkeypatch.setattr(shared, "_away_until", 0.0)
    assert [record.getMessage() for record in caplog.records] == ["recall.bookkeeping_unavailable"]
    assert not _client().exists(PENDING)  # Redis answers: the old client would have counted it

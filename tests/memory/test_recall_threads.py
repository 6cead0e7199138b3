"""Work recall hands on `after_searches` (a count of a search's words) starts once no search runs in this process."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from memory.access import access_for_user
from memory.models import User
from memory.recall import search as recall_search
from memory.recall import threads
from memory.recall.search import SearchRequest
from tests.factories import ClaimFactory


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work handed on after searches waits for them as long as a test could take."""
    monkeypatch.setattr(threads, "SEARCHES_WAITED", 60)


def test_work_after_searches_starts_once_every_search_in_flight_has_ended(patient: None) -> None:
    started, other = threading.Event(), threading.Event()
    with threads.searching():
        with threads.searching():
            assert threads.submitted("after-searches-test", 4, started.set, after_searches=True)
            assert threads.submitted("other-work-test", 4, other.set)  # not after searches: at once
            assert other.wait(10)
        assert not started.wait(0.3)  # one search still in flight
    assert started.wait(10)
    threads.drained("after-searches-test")


def test_work_after_searches_waits_no_longer_than_searches_waited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "SEARCHES_WAITED", 0.05)  # a server never idle still counts
    started = threading.Event()
    with threads.searching():
        assert threads.submitted("after-searches-test", 4, started.set, after_searches=True)
        assert started.wait(10)


def test_work_waiting_behind_other_work_waits_for_searches_from_its_hand_over(monkeypatch: pytest.MonkeyPatch) -> None:
    busy, started = threading.Event(), threading.Event()
    monkeypatch.setattr(threads, "SEARCHES_WAITED", 0.2)
    with threads.searching():
        assert threads.submitted("after-searches-test", 4, busy.wait, 30)
        assert threads.submitted("after-searches-test", 4, started.set, after_searches=True)
        threading.Event().wait(0.4)  # its time to wait for searches is over while the work before it runs
        monkeypatch.setattr(threads, "SEARCHES_WAITED", 60)  # were it counted from its start, it would wait this
        busy.set()
        assert started.wait(10)


def test_a_search_that_failed_is_no_longer_in_flight(patient: None) -> None:
    started = threading.Event()
    with pytest.raises(ValueError, match="failed"), threads.searching():
        raise ValueError("failed")
    assert threads.submitted("after-searches-test", 4, started.set, after_searches=True)
    assert started.wait(10)


@pytest.mark.django_db
def test_a_search_is_in_flight_until_it_has_its_answer(
    alice: User, patient: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    started, waited = threading.Event(), []
    read = recall_search.hydrated

    def reading(*args: Any) -> Any:  # the search's last statement: work after searches has not started
        threads.submitted("after-searches-test", 4, started.set, after_searches=True)
        waited.append(not started.wait(0.3))
        return read(*args)

    monkeypatch.setattr(recall_search, "hydrated", reading)
    found = recall_search.search(access_for_user(user=alice), SearchRequest(query="cello", use_vector=False))
    assert found and waited == [True]
    assert started.wait(10)


def test_work_a_full_pool_drops_is_logged_with_its_count_at_most_so_often(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    held, ran, again = threading.Event(), threading.Event(), threading.Event()
    assert threads.submitted("drops-test", 1, held.wait, 30)  # the one place taken
    with caplog.at_level("WARNING", logger="memory.recall"):
        assert not threads.submitted("drops-test", 1, ran.set)  # logged at once: the first since the start
        assert not threads.submitted("drops-test", 1, ran.set)
        assert not threads.submitted("drops-test", 1, ran.set)  # counted, not logged: the last line is recent
        monkeypatch.setattr(threads, "DROPS_LOGGED_EVERY", 0.0)
        held.set()  # the work ends: the two counted are logged then, not left for a next drop that may never come
        threads.drained("drops-test")
        assert threads.submitted("drops-test", 1, again.wait, 30)
        assert not threads.submitted("drops-test", 1, ran.set, drops_logged=False)  # a caller that logs its own
        again.set()
        threads.drained("drops-test")
    lines = [record for record in caplog.records if record.getMessage() == "recall.work_dropped"]
    assert [(line.pool, line.waiting, line.dropped) for line in lines] == [("drops-test", 1, 1), ("drops-test", 0, 2)]  # type: ignore[attr-defined]
    assert not ran.is_set()

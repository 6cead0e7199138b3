"""Writes to Redis tried again until Redis answers (config.redis_retry). The outage itself, over a server's real
HTTP and a Redis stopped and started again, is in tests/test_outages.py."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from config import redis_retry
from tests.conftest import owed_settled, redis_left_alone


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 0.01)
    monkeypatch.setattr(redis_retry, "LONGEST_WAIT", 0.05)
    monkeypatch.setattr(redis_retry, "_closing", False)  # a test of the process's end ends it


def failing(times: int, calls: list[str], name: str) -> Callable[[], None]:
    """Work that raises as Redis away would, `times` times, then succeeds; each call noted in `calls`."""

    def work() -> None:
        calls.append(name)
        if calls.count(name) <= times:
            raise RedisConnectionError("Connection refused.")

    return work


def settled(timeout: float = 10) -> None:
    owed_settled(timeout)
    assert redis_retry.owed() == 0


def test_work_is_tried_again_until_it_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []
    with caplog.at_level(logging.INFO, logger="config.redis_retry"):
        redis_retry.retried(("memory-version", 1), failing(3, calls, "bump"))
        settled()
    assert calls == ["bump"] * 4
    assert [record.getMessage() for record in caplog.records] == ["redis_retry.done"]


def test_a_later_piece_of_work_for_the_same_key_replaces_the_one_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 1.0)
    calls: list[str] = []
    redis_retry.retried(("erased-views", 2), failing(99, calls, "older"))
    redis_retry.retried(("erased-views", 2), failing(0, calls, "newer"))
    redis_retry.retried(("erased-views", 3), failing(0, calls, "another owner's"))
    settled()
    assert sorted(calls) == ["another owner's", "newer"]


def test_work_still_failing_after_retried_seconds_is_given_up(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(redis_retry, "RETRIED_SECONDS", 0.2)
    calls: list[str] = []
    with caplog.at_level(logging.ERROR, logger="config.redis_retry"):
        redis_retry.retried(("memory-version", 4), failing(10_000, calls, "bump"))
        settled()
    assert 2 <= len(calls) < 100
    assert [record.getMessage() for record in caplog.records] == ["redis_retry.given_up"]


def test_what_still_waits_at_exit_is_tried_once_more_and_logged_if_it_fails(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 60)  # the thread would not try them before the exit does
    calls: list[str] = []
    redis_retry.retried(("memory-version", 5), failing(0, calls, "answered"))
    redis_retry.retried(("memory-version", 6), failing(1, calls, "still away"))
    with caplog.at_level(logging.ERROR, logger="config.redis_retry"):
        redis_retry.tried_once_more()
    assert (sorted(calls), redis_retry.owed()) == (["answered", "still away"], 0)
    assert [record.getMessage() for record in caplog.records] == ["redis_retry.lost"]


def test_an_error_other_than_redis_s_is_logged_and_not_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def broken() -> None:
        calls.append(threading.current_thread().name)
        raise ValueError("a bug, not an outage")

    with caplog.at_level(logging.ERROR, logger="config.redis_retry"):
        redis_retry.retried(("memory-version", 7), broken)
        settled()
        time.sleep(0.1)  # time for a second try, were there one
    assert calls == ["redis-retry"]
    assert [record.getMessage() for record in caplog.records] == ["redis_retry.failed"]


def test_a_celery_pool_process_tries_once_more_as_it_shuts_down(monkeypatch: pytest.MonkeyPatch) -> None:
    from celery.signals import worker_process_shutdown

    import config.celery  # noqa: F401  (connects the worker's handlers)

    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 60)
    calls: list[str] = []
    redis_retry.retried(("memory-version", 8), failing(0, calls, "answered"))
    worker_process_shutdown.send(sender=None, pid=0, exitcode=0)  # as billiard sends it in a pool process
    assert (calls, redis_retry.owed()) == (["answered"], 0)


def test_waits_double_up_to_the_longest_and_a_replacement_keeps_its_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 0.02)
    monkeypatch.setattr(redis_retry, "LONGEST_WAIT", 0.08)
    calls: list[float] = []

    def failing_for_a_while() -> None:
        calls.append(time.monotonic())
        if len(calls) < 6:
            raise RedisConnectionError("Connection refused.")

    redis_retry.retried(("memory-version", 9), failing_for_a_while)
    with redis_retry._changed:
        waiting = redis_retry._owed[("memory-version", 9)]
    redis_retry.retried(("memory-version", 9), failing_for_a_while)  # a later write's, same owner
    with redis_retry._changed:
        assert redis_retry._owed.get(("memory-version", 9), waiting) == waiting  # neither sooner nor later
    settled()
    gaps = [later - earlier for earlier, later in itertools.pairwise(calls)]
    assert len(calls) == 6
    # Doubled, then capped: never under the wait, however slow the machine.
    assert [gap >= wait for gap, wait in zip(gaps, [0.04, 0.08, 0.08, 0.08, 0.08], strict=False)] == [True] * 5


def test_work_being_tried_as_the_process_ends_is_waited_for_and_logged_as_lost_if_it_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started, go_on = threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        go_on.wait(10)
        raise RedisConnectionError("Connection refused.")

    redis_retry.retried(("erased-views", 10), slow)
    assert started.wait(10)
    with caplog.at_level(logging.ERROR, logger="config.redis_retry"):
        ending = threading.Thread(target=redis_retry.tried_once_more)
        ending.start()
        time.sleep(0.05)
        go_on.set()
        ending.join(10)
        redis_retry.retried(("memory-version", 11), slow)  # after the end began: lost at once, no thread to try it
    assert redis_retry.owed() == 0
    assert [(record.getMessage(), record.key) for record in caplog.records] == [  # type: ignore[attr-defined]
        ("redis_retry.lost", "('erased-views', 10)"),
        ("redis_retry.lost", "('memory-version', 11)"),
    ]


def test_after_a_fork_the_child_owes_nothing_and_retries_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 60)
    redis_retry.retried(("memory-version", 12), lambda: None)  # the parent's, waiting
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child
        owed_at_fork = redis_retry.owed()
        redis_retry.FIRST_WAIT = 0.01
        done: list[int] = []
        redis_retry.retried(("memory-version", 13), lambda: done.append(1))
        deadline = time.monotonic() + 10
        while not done and time.monotonic() < deadline:
            time.sleep(0.01)
        os.write(write, f"{owed_at_fork} {len(done)}".encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    assert os.read(read, 100).decode() == "0 1"
    assert redis_retry.owed() == 1  # the parent's still waits here
    redis_retry.tried_once_more()


@pytest.fixture
def briefly_away(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process leaves Redis alone for 0.3 s from now (config.cache.redis_away), as after a call it did not
    answer; Redis itself answers."""
    redis_left_alone(monkeypatch, seconds=0.3)


def test_work_refused_while_redis_is_away_is_tried_as_soon_as_it_is_asked_again(briefly_away: None) -> None:
    from django.core.cache import cache

    calls: list[str] = []

    def bump() -> None:
        calls.append("tried")
        cache.set("retry-test", 1)

    redis_retry.retried(("memory-version", 14), bump)
    settled()
    assert calls == ["tried", "tried"]  # refused once, done once: not refused over and over, its wait doubling
    assert cache.get("retry-test") == 1


def test_the_process_s_end_asks_redis_again_even_while_it_was_leaving_it_alone(
    briefly_away: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from django.core.cache import cache

    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 60)
    redis_retry.retried(("erased-views", 15), lambda: cache.set("retry-test", 2))
    with caplog.at_level(logging.ERROR, logger="config.redis_retry"):
        redis_retry.tried_once_more()
    assert (cache.get("retry-test"), caplog.records) == (2, [])


@pytest.mark.django_db
def test_a_credentials_change_refused_while_redis_is_away_reaches_the_other_processes_once_it_is_asked_again(
    briefly_away: None,
) -> None:
    import redis
    from django.conf import settings

    from memory import credentials

    other_process = redis.Redis.from_url(settings.REDIS_URL)  # reads the generation as another process would
    before = other_process.get(credentials.GENERATION_KEY)
    credentials._bump()  # a token revoked: refused, this process leaves Redis alone
    settled()
    assert other_process.get(credentials.GENERATION_KEY) != before


@pytest.mark.django_db
def test_healthz_asks_redis_even_while_the_process_leaves_it_alone_and_ends_the_wait(
    briefly_away: None, client: object
) -> None:
    from config import cache as shared

    assert shared.redis_away()
    answer = client.get("/healthz").json()  # type: ignore[attr-defined]
    assert answer["redis"] == "ok"
    assert not shared.redis_away()


@pytest.mark.django_db
def test_healthz_answers_at_once_while_a_watcher_waits_for_redis(
    monkeypatch: pytest.MonkeyPatch, client: object
) -> None:
    """A load balancer's probe during an outage gets its 503 at once, not after REDIS_TIMEOUT_S: the watcher asks."""
    from config import cache as shared

    asked: list[str] = []

    def silent() -> bool:  # Redis not answering the watcher's PINGs
        raise RedisConnectionError("paused")

    def pinged(client: object = None) -> bool:
        asked.append("PING")
        return True

    monkeypatch.setattr(shared, "WATCH_EVERY", 0.05)
    monkeypatch.setattr(shared, "_pinged", pinged)
    shared.noted_away(silent)
    assert shared.redis_watched()

    response = client.get("/healthz")  # type: ignore[attr-defined]

    assert response.status_code == 503
    assert (response.json()["redis"], response.json()["worker"]) == ("error", "absent")
    assert asked == []  # Redis was not asked: the watcher does
    shared.redis_heard()
    assert client.get("/healthz").json()["redis"] == "ok"  # type: ignore[attr-defined]
    assert asked == ["PING"]


def _watcher_gone() -> None:
    """A watcher thread that ended without saying so (it cannot, but if it did)."""
    from config import cache as shared

    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    shared._watcher = ended


@pytest.mark.django_db
def test_healthz_asks_redis_when_the_watcher_is_gone(client: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """It would otherwise hold every probe at 503: /healthz asks, and the answer ends the wait."""
    from config import cache as shared

    redis_left_alone(monkeypatch)
    _watcher_gone()
    assert shared.redis_away() and not shared.redis_watched()

    assert client.get("/healthz").json()["redis"] == "ok"  # type: ignore[attr-defined]
    assert not shared.redis_away()


def test_a_watcher_gone_holds_the_process_away_from_redis_no_longer_than_without_one() -> None:
    """config.cache.redis_away and away_for: the deadline alone, not an outage for good."""
    from config import cache as shared

    _watcher_gone()
    assert not shared.redis_away() and shared.away_for() == 0.0
    assert shared.asked_of_redis(lambda: "asked") == "asked"


def test_when_redis_answers_again_what_is_owed_is_tried_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not at its next wait's end (30 s at most, once an outage lasted a minute): config.cache's watcher heard Redis."""
    from config import cache as shared

    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 60)
    calls: list[str] = []
    redis_retry.retried(("memory-version", 16), failing(0, calls, "bump"))
    redis_left_alone(monkeypatch)
    time.sleep(0.1)
    assert calls == []  # waiting its first wait (60 s)
    shared.redis_heard()
    settled()
    assert calls == ["bump"]


def test_while_a_watcher_waits_for_redis_work_refused_waits_for_its_answer_not_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Owed work refused while Redis is away is not tried again every second of the outage (a thousand owed jobs
    would be); the watcher hearing Redis brings it on."""
    from config import cache as shared

    monkeypatch.setattr(redis_retry, "LONGEST_WAIT", 60)
    monkeypatch.setattr(shared, "WATCH_EVERY", 0.05)

    def unanswered() -> bool:
        raise RedisConnectionError("Connection refused.")

    shared.noted_away(unanswered)
    calls: list[str] = []

    def refused_while_away() -> None:
        calls.append("tried")
        shared.asked_of_redis(lambda: None)  # RedisAway while the watcher waits

    redis_retry.retried(("memory-version", 17), refused_while_away)
    time.sleep(1.5)
    assert calls == ["tried"]
    shared.redis_heard()
    settled()
    assert calls == ["tried", "tried"]


def test_at_the_process_s_end_a_piece_failing_otherwise_than_redis_leaves_the_rest_tried(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(redis_retry, "FIRST_WAIT", 60)
    calls: list[str] = []

    def broken() -> None:
        raise ValueError("a database error, say")

    redis_retry.retried(("operation", "op_1"), broken)
    redis_retry.retried(("memory-version", 18), failing(0, calls, "answered"))
    with caplog.at_level(logging.ERROR, logger="config.redis_retry"):
        redis_retry.tried_once_more()
    assert calls == ["answered"]
    assert [(record.getMessage(), record.key) for record in caplog.records] == [  # type: ignore[attr-defined]
        ("redis_retry.lost", "('operation', 'op_1')")
    ]

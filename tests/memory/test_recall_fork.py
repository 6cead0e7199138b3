"""A process forked while one of its threads holds the lock of recall's threads (a Celery pool child, a web worker's
reload): the child's lock is free, no key the parent's work held is held in the child, and no search is in flight."""

from __future__ import annotations

import os
import threading
import time

import pytest

from memory.recall import threads


def test_a_child_forked_while_recalls_lock_is_held_can_take_it_and_holds_no_key_of_its_parent() -> None:
    held, release = threading.Event(), threading.Event()

    def holding() -> None:
        assert threads.claimed("fork-test", {"a word waiting in the parent"})
        with threads._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=holding)
    holder.start()
    assert held.wait(10)
    child = os.fork()
    if child == 0:  # the child: its parent's holder thread is gone, and never releases what it held
        taken = threads._lock.acquire(timeout=5)
        if taken:
            threads._lock.release()
        free = taken and threads.claimed("fork-test", {"a word waiting in the parent"}) == {
            "a word waiting in the parent"
        }
        os._exit(0 if free else 1)
    release.set()
    holder.join()
    threads.released("fork-test", {"a word waiting in the parent"})
    assert exit_code(child) == 0


def exit_code(child: int) -> int | None:
    """The forked child's exit code; None if it ran over 20 s (then killed)."""
    deadline = time.monotonic() + 20
    while (finished := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if finished[0] == 0:
        os.kill(child, 9)
        os.waitpid(child, 0)
        return None
    return os.waitstatus_to_exitcode(finished[1])


def test_a_child_forked_during_a_search_has_no_search_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "SEARCHES_WAITED", 60)  # inherited: the child's work would wait that long
    with threads.searching():
        child = os.fork()
        if child == 0:  # the child: the parent's search never ends there
            started = threading.Event()
            handed = threads.submitted("fork-test", 4, started.set, after_searches=True)
            os._exit(0 if handed and started.wait(10) else 1)
    assert exit_code(child) == 0


def test_a_child_forked_during_a_search_and_leaving_it_has_none_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "SEARCHES_WAITED", 60)
    with threads.searching():
        child = os.fork()
    if child == 0:  # the child left the parent's search: still none in flight, not fewer than none
        started = threading.Event()
        handed = threads.submitted("fork-test", 4, started.set, after_searches=True)
        os._exit(0 if handed and started.wait(10) else 1)
    assert exit_code(child) == 0

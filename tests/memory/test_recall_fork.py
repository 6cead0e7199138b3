"""A process forked while one of its threads holds the lock of recall's threads (a Celery pool child, a web worker's
reload): the child's lock is free, and no key the parent's work held is held in the child."""

from __future__ import annotations

import os
import threading
import time

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
    deadline = time.monotonic() + 20
    while (finished := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if finished[0] == 0:
        os.kill(child, 9)
        os.waitpid(child, 0)
    assert finished[0] == child and os.waitstatus_to_exitcode(finished[1]) == 0

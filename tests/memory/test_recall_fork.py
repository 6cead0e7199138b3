"""A process forked while one of its threads holds a lock of recall's threads (a Celery pool child, a web worker's
reload): the child's locks are free."""

from __future__ import annotations

import os
import threading
import time

from memory.recall import threads, word_statistics


def test_a_child_forked_while_recalls_locks_are_held_can_take_them() -> None:
    held, release = threading.Event(), threading.Event()

    def holding() -> None:
        with threads._lock, word_statistics._waiting_lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=holding)
    holder.start()
    assert held.wait(10)
    child = os.fork()
    if child == 0:  # the child: its parent's holder thread is gone, and never releases what it held
        taken = threads._lock.acquire(timeout=5) and word_statistics._waiting_lock.acquire(timeout=5)
        os._exit(0 if taken else 1)
    release.set()
    holder.join()
    deadline = time.monotonic() + 20
    while (finished := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if finished[0] == 0:
        os.kill(child, 9)
        os.waitpid(child, 0)
    assert finished[0] == child and os.waitstatus_to_exitcode(finished[1]) == 0

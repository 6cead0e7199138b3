"""A test run stopped with SIGTERM ends as one stopped with Ctrl-C.

CI's timeout, `kill` and a supervisor stop a run with SIGTERM, whose default ends the process at once: no fixture
teardown and no atexit, so the servers the run started (uvicorn, Celery workers, the embedded PostgreSQL and
Redis, config.embedded) were left running, and once the run's directory was deleted nothing would stop them. The
first SIGTERM now raises KeyboardInterrupt in the main thread: pytest stops, tears every fixture down and exits 2,
and the run's lease on the embedded servers is given up at exit (the last holder stops them). A second SIGTERM
ends the run at once, as before.

Loaded by tests/conftest.py for the suite, and with `-p tests.sigterm` by a run of other tests (tests/test_runtime.py).
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

import pytest


def interrupt_on_sigterm() -> None:
    """The first SIGTERM interrupts the run as Ctrl-C does; left alone where SIGTERM already has a handler, or off
    the main thread (where none can be set). A process the run forks (tests of forked children) ends at a SIGTERM
    as before: interrupted, it would run the session's teardown (the test database's, over the connection it shares)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupted)
        os.register_at_fork(after_in_child=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))


def _interrupted(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the run at once
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    interrupt_on_sigterm()

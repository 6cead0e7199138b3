"""`make run`'s supervisor with stand-in children (small Python processes): a child that dies is restarted
with backoff while the others keep running, and a crash loop stops everything."""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

from memory.management.commands.runall import Supervisor
from tests.process import free_port

STEADY = "import time; time.sleep(120)"
# Records each start, then dies at once the first time and stays up afterwards.
FLAKY = """
import sys, time
from pathlib import Path
log = Path(sys.argv[1]); starts = log.read_text().count("start") if log.exists() else 0
log.write_text(log.read_text() + "start\\n" if log.exists() else "start\\n")
if starts == 0:
    sys.exit(1)
time.sleep(120)
"""
# Records each start and dies every time.
CRASHING = """
import sys
from pathlib import Path
log = Path(sys.argv[1]); log.write_text((log.read_text() if log.exists() else "") + "start\\n"); sys.exit(1)
"""


def _supervise(supervisor: Supervisor) -> tuple[threading.Thread, list[int]]:
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(supervisor.run(install_signals=False)), daemon=True)
    thread.start()
    return thread, result


def _wait(predicate: object, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_a_child_that_dies_is_restarted_and_the_others_keep_running(tmp_path: Path) -> None:
    starts = tmp_path / "flaky.log"
    supervisor = Supervisor(
        {"steady": [sys.executable, "-c", STEADY], "flaky": [sys.executable, "-c", FLAKY, str(starts)]},
        backoff_s=0.1,
    )
    thread, result = _supervise(supervisor)
    try:
        assert _wait(lambda: "steady" in supervisor.children)
        steady_pid = supervisor.children["steady"].pid
        assert _wait(lambda: starts.exists() and starts.read_text().count("start") == 2)
        assert _wait(lambda: supervisor.children["flaky"].poll() is None)
        assert supervisor.children["steady"].pid == steady_pid
        assert supervisor.children["steady"].poll() is None
        assert thread.is_alive() and not result  # the service as a whole kept running
        assert supervisor.restarts["flaky"] == 1
    finally:
        supervisor.stopping = True
        thread.join(timeout=60)
    assert result == [0]
    assert all(child.poll() is not None for child in supervisor.children.values())


def test_a_crash_loop_gives_up_and_stops_the_rest(tmp_path: Path) -> None:
    starts = tmp_path / "crashing.log"
    supervisor = Supervisor(
        {"steady": [sys.executable, "-c", STEADY], "crashing": [sys.executable, "-c", CRASHING, str(starts)]},
        backoff_s=0.05,
        crash_loop_restarts=3,
        crash_loop_window_s=60,
    )
    thread, result = _supervise(supervisor)
    thread.join(timeout=60)
    assert result == [1]
    assert starts.read_text().count("start") == 4  # the first start and three restarts, then it gave up
    assert supervisor.children["steady"].poll() is not None


# Listens on the port in argv[1] after a moment (a web server importing its application), then serves nothing.
LISTENING = """
import socket, sys, time
from pathlib import Path
time.sleep(1)
server = socket.socket(); server.bind(("127.0.0.1", int(sys.argv[1]))); server.listen()
Path(sys.argv[2]).write_text(Path(sys.argv[2]).read_text() + "listening\\n")
time.sleep(120)
"""
# Notes its start in the shared log.
NOTING = """
import sys, time
from pathlib import Path
Path(sys.argv[1]).write_text(Path(sys.argv[1]).read_text() + "started\\n")
time.sleep(120)
"""


def listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def test_the_other_children_start_once_the_first_one_listens(tmp_path: Path) -> None:
    # On two cores, a worker and beat importing Django beside the web server doubled the time to /healthz.
    log = tmp_path / "order.log"
    log.write_text("")
    port = free_port()
    supervisor = Supervisor(
        {
            "web": [sys.executable, "-c", LISTENING, str(port), str(log)],
            "worker": [sys.executable, "-c", NOTING, str(log)],
        },
        first_ready=lambda: listening("127.0.0.1", port),
    )
    thread, result = _supervise(supervisor)
    try:
        assert _wait(lambda: log.read_text().count("\n") == 2)
        assert log.read_text().splitlines() == ["listening", "started"]
    finally:
        supervisor.stopping = True
        thread.join(timeout=60)
    assert result == [0]


def test_the_other_children_start_even_if_the_first_one_dies_before_it_listens(tmp_path: Path) -> None:
    log = tmp_path / "order.log"
    log.write_text("")
    supervisor = Supervisor(
        {"web": [sys.executable, "-c", "raise SystemExit(1)"], "worker": [sys.executable, "-c", NOTING, str(log)]},
        backoff_s=60,
        first_ready=lambda: False,
    )
    thread, result = _supervise(supervisor)
    try:
        assert _wait(lambda: "started" in log.read_text())
    finally:
        supervisor.stopping = True
        thread.join(timeout=60)
    assert result == [0]

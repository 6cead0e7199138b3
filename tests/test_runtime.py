"""The embedded runtime and `make run`'s supervisor, exercised as a user would: real processes, real HTTP."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from config import embedded
from config.embedded import Runtime, _Redis, is_running
from tests import sigterm
from tests.process import ROOT, free_port, manage, service_env, wait_for

pytestmark = pytest.mark.server

CONCURRENT_STARTER = """
import sys, time
from pathlib import Path
from config.embedded import Runtime, ensure_started
runtime = Runtime(Path(sys.argv[1]), postgres=True, redis=True)
ensure_started(runtime)
print((runtime.pgdata / "postmaster.pid").read_text().split()[0], (runtime.redis_dir / "redis.pid").read_text().strip())
time.sleep(float(sys.argv[2]))
"""


def test_simultaneous_starters_share_one_server_and_the_last_one_stops_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_STARTER, str(data_dir), str(1 + index)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for index in range(4)
    ]
    outputs = [starter.communicate(timeout=120)[0].strip() for starter in starters]
    assert all(starter.returncode == 0 for starter in starters)
    assert len(set(outputs)) == 1, outputs  # same PostgreSQL and Redis pids for every process
    assert is_running(Runtime(data_dir, postgres=True, redis=True)) == {"postgres": False, "redis": False}


HELD_RUN = """
import time
from pathlib import Path

import pytest

from config.embedded import Runtime, ensure_started

DATA = Path({data!r})


@pytest.fixture
def torn_down():
    yield
    (DATA.parent / "torn-down").write_text("yes")


def test_held(torn_down):
    ensure_started(Runtime(DATA, postgres=True, redis=True))
    (DATA.parent / "ready").write_text("yes")
    time.sleep(120)
"""


def test_a_test_run_stopped_with_sigterm_tears_down_and_stops_its_servers(tmp_path: Path) -> None:
    """CI's timeout and `kill` stop a run with SIGTERM, which used to end it at once: no teardown, no atexit, and its
    embedded PostgreSQL and Redis left running (tests/sigterm.py). A run of a test holding both, with the suite's
    plugin, stopped while the test runs: interrupted as by Ctrl-C, its fixture torn down, both servers stopped."""
    data_dir = tmp_path / "data"
    runtime = Runtime(data_dir, postgres=True, redis=True)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the project's settings: no Django, no timeout
    (tmp_path / "test_held.py").write_text(HELD_RUN.format(data=str(data_dir)))
    command = [sys.executable, "-m", "pytest", "-c", str(tmp_path / "pytest.ini"), "-p", "no:django",
               "-p", "no:cacheprovider", "-p", "tests.sigterm", "-q", str(tmp_path / "test_held.py")]  # fmt: skip
    env = {name: value for name, value in os.environ.items() if name not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    with (tmp_path / "run.log").open("w") as log:
        run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "ready").exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "ready").exists(), (tmp_path / "run.log").read_text()
        assert is_running(runtime) == {"postgres": True, "redis": True}
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=120) == pytest.ExitCode.INTERRUPTED, (tmp_path / "run.log").read_text()
        assert (tmp_path / "torn-down").read_text() == "yes"
        assert is_running(runtime) == {"postgres": False, "redis": False}
        assert servers_on(runtime.redis_socket) == []
    finally:
        run.kill()
        run.wait()
        embedded.stop(runtime)  # whatever the run left, should it have left anything
        killed(runtime.redis_socket)


def test_a_process_the_run_forks_ends_at_sigterm_as_before() -> None:
    """The suite's SIGTERM handler is the run's (tests/sigterm.py): a forked child interrupted by it would run the
    session's teardown from its copy of pytest, so a fork starts with SIGTERM's default again."""
    assert signal.getsignal(signal.SIGTERM) is sigterm._interrupted
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: says what SIGTERM does here, and ends without Python's exit
        os.write(write, b"default" if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL else b"handled")
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 16) == b"default"
    os.close(read)


def test_probing_a_stopped_redis_tries_to_connect_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # redis-py retries a refused connection with backoff (about 4 s in all): every start paid that before it
    # started Redis, and so did a wait for the socket to appear. A stopped server is simply not running.
    attempts = []
    connect = redis.connection.UnixDomainSocketConnection._connect

    def counted(self: redis.connection.UnixDomainSocketConnection) -> Any:
        attempts.append(self.path)
        return connect(self)

    monkeypatch.setattr(redis.connection.UnixDomainSocketConnection, "_connect", counted)
    assert _Redis(Runtime(tmp_path / "data", postgres=False, redis=True)).is_running() is False
    assert len(attempts) == 1


def servers_on(socket: Path) -> list[int]:
    """The redis-server processes serving `socket`, by their process titles (`unixsocket:<socket>`, a word)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            words = command.replace(b"\0", b" ").split()
            if b"redis-server" in command and b"unixsocket:" + str(socket).encode() in words:
                found.append(int(entry.name))
    return found


def killed(socket: Path) -> None:
    """Every redis-server on `socket` gone (a paused one continued first, so that it can die)."""
    for left in servers_on(socket):
        os.kill(left, signal.SIGCONT)
        os.kill(left, signal.SIGKILL)


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[_Redis, int]]:
    """An embedded Redis of the test's own, running, and its pid; whatever serves its socket at the end is killed."""
    server = _Redis(Runtime(tmp_path / "data", postgres=False, redis=True))
    server.ensure_running()
    try:
        yield server, int((server.runtime.redis_dir / "redis.pid").read_text())
    finally:
        killed(server.runtime.redis_socket)


@contextmanager
def stand_in(server: _Redis, title: list[str], code: str = "import time; time.sleep(60)") -> Iterator[int]:
    """A process running `code` whose command line ends in `title`, named by the server's pid file meanwhile."""
    process = subprocess.Popen([sys.executable, "-c", code, *title])
    try:
        (server.runtime.redis_dir / "redis.pid").write_text(f"{process.pid}\n")
        time.sleep(0.3)  # it has started (and run the first lines of `code`)
        yield process.pid
        assert process.poll() is None  # not signalled, or not stopped by it
    finally:
        process.kill()
        process.wait()


def test_a_paused_redis_is_stopped_at_the_end_and_keeps_what_it_held(own_server: tuple[_Redis, int]) -> None:
    """`make run` ending while its Redis is paused (SIGSTOP) left the server behind, paused, its socket taken: the
    next start found it silent and said so. Stopping now continues it first; its append-only file keeps the data."""
    server, pid = own_server
    redis.Redis(unix_socket_path=str(server.runtime.redis_socket)).set("kept", "yes")
    os.kill(pid, signal.SIGSTOP)
    server.stop()
    assert servers_on(server.runtime.redis_socket) == []
    server.ensure_running()
    assert redis.Redis(unix_socket_path=str(server.runtime.redis_socket)).get("kept") == b"yes"
    server.stop()
    assert servers_on(server.runtime.redis_socket) == []


def test_a_silent_socket_whose_pid_file_names_another_process_is_left_alone(own_server: tuple[_Redis, int]) -> None:
    """A pid file can outlive its server (and the pid be another process's since): only a redis-server serving the
    socket is ever signalled, named as a word of its title (not a longer path that holds this one)."""
    server, pid = own_server
    os.kill(pid, signal.SIGSTOP)
    with stand_in(server, ["redis-server", f"unixsocket:/elsewhere{server.runtime.redis_socket}"]):  # another's, say
        server.stop()
    assert servers_on(server.runtime.redis_socket) == [pid]  # and the silent server, unknown to the pid file, stays


def test_a_redis_that_does_not_stop_is_said_not_to_have(
    own_server: tuple[_Redis, int], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Hung past a signal's reach (here: a stand-in with the server's title that ignores SIGTERM, named by the pid
    file while the real server is paused), the server is not forced: the end says it did not stop."""
    monkeypatch.setattr(embedded, "_REDIS_STOP_TIMEOUT_S", 0.5)
    server, pid = own_server
    os.kill(pid, signal.SIGSTOP)
    ignoring = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    title = ["redis-server", f"unixsocket:{server.runtime.redis_socket}"]
    with stand_in(server, title, ignoring) as hung, caplog.at_level(logging.WARNING, logger="memory.embedded"):
        server.stop()
    assert [record.getMessage() for record in caplog.records] == ["embedded.redis.not_stopped"]
    assert caplog.records[0].pid == hung  # type: ignore[attr-defined]


def test_a_redis_that_is_alive_but_silent_is_not_started_a_second_time(
    own_server: tuple[_Redis, int], caplog: pytest.LogCaptureFixture
) -> None:
    """Paused or hung (a child of `make run` restarted meanwhile): a second server on its socket and its files would
    split the queue and the caches between two, and append to one file from both. The process does without Redis
    until it answers, as in any outage."""
    server, pid = own_server
    socket = server.runtime.redis_socket
    os.kill(pid, signal.SIGSTOP)
    try:
        with caplog.at_level(logging.WARNING, logger="memory.embedded"):
            server.ensure_running()
        assert servers_on(socket) == [pid]
        assert [record.getMessage().split(":")[0] for record in caplog.records] == ["embedded.redis.not_answering"]
        assert str(socket) in caplog.records[0].getMessage()
        os.kill(pid, signal.SIGCONT)
        assert server.is_running()
    finally:
        killed(socket)  # the paused one, and any second one started beside it
    assert servers_on(socket) == []
    server.ensure_running()  # a socket left by a server gone: started anew
    assert servers_on(socket) != [] and server.is_running()
    server.stop()
    assert servers_on(socket) == []


class RunningService:
    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        self.env = service_env(data_dir, self.port)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data_dir.parent / f"runall-{self.port}.log"
        data_dir.mkdir(parents=True, exist_ok=True)
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runall"], cwd=ROOT, env=self.env,
            stdout=self.log.open("w"), stderr=subprocess.STDOUT,
        )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text()

    def stop(self, signum: int = signal.SIGINT) -> int:
        self.process.send_signal(signum)
        return self.process.wait(timeout=60)

    def post(self, path: str, secret: str, body: dict | None = None) -> httpx.Response:
        return httpx.post(f"{self.url}{path}", json=body or {}, headers={"Authorization": f"Bearer {secret}"})


def printed_token(output: str) -> str:
    line = next(line for line in output.splitlines() if "Access token" in line)
    return line.split(":", 1)[1].strip()


def test_make_run_serves_everything_stops_cleanly_and_keeps_data(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    service = RunningService(data_dir)
    try:
        health = wait_for(f"{service.url}/healthz", until='"worker": "ok"').json()
        assert health == {"status": "ok", "db": "ok", "redis": "ok", "worker": "ok", "migrations": "current"}
        secret = printed_token(service.output())
        assert service.post("/whoami", secret).json()["username"] == "admin"
        wrong = service.post("/whoami", secret[:-2] + "zz")
        assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "TOKEN_INVALID")

        minted = manage("issue_token", "--user", "admin", "--label", "script", env=service.env)
        assert minted.returncode == 0, minted.stderr
        assert service.post("/whoami", minted.stdout.strip()).json()["token"]["label"] == "script"
        partition = service.post("/partitions/create", secret, {"key": "project:kept"})
        assert partition.status_code == 201
        children = [int(pid) for pid in _child_pids(service.process.pid)]
        assert len(children) == 3
    finally:
        code = service.stop(signal.SIGINT)
    assert code == 0
    assert not [pid for pid in children if _alive(pid)]
    runtime = Runtime(data_dir.resolve(), postgres=True, redis=True)
    assert is_running(runtime) == {"postgres": False, "redis": False}

    again = RunningService(data_dir)
    try:
        wait_for(f"{again.url}/healthz", until='"status": "ok"')
        assert "Access token" not in again.output()  # printed on first start only
        assert again.post("/whoami", secret).status_code == 200
        keys = [p["key"] for p in again.post("/partitions/list", secret).json()["partitions"]]
        assert "project:kept" in keys
    finally:
        assert again.stop(signal.SIGTERM) == 0
    assert is_running(runtime) == {"postgres": False, "redis": False}


def test_closing_the_terminal_stops_everything_and_a_second_start_says_what_runs(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    service = RunningService(data_dir)
    try:
        wait_for(f"{service.url}/healthz", until='"worker": "ok"')
        second = manage("runall", env=service.env, timeout=60)
        assert second.returncode != 0
        assert "already running" in second.stderr, second.stderr
        assert f"runall={service.process.pid}" in second.stderr

        worker = _worker_pid(service.process.pid)
        os.kill(worker, signal.SIGKILL)  # the main worker dies: it is restarted, the service keeps serving
        deadline = time.monotonic() + 60
        while _worker_pid(service.process.pid) in {worker, 0} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _worker_pid(service.process.pid) not in {worker, 0}
        assert service.process.poll() is None
        wait_for(f"{service.url}/healthz", until='"worker": "ok"')
        children = [int(pid) for pid in _child_pids(service.process.pid)]
        assert len(children) == 3
    finally:
        code = service.stop(signal.SIGHUP)
    assert code == 0
    assert not [pid for pid in children if _alive(pid)]
    assert is_running(Runtime(data_dir.resolve(), postgres=True, redis=True)) == {"postgres": False, "redis": False}


def _worker_pid(supervisor: int) -> int:
    for pid in _child_pids(supervisor):
        if b"worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return int(pid)
    return 0


def test_health_is_503_when_the_database_is_down(tmp_path: Path) -> None:
    port = free_port()
    env = service_env(
        tmp_path / "data", port, DATABASE_URL=f"postgresql://postgres@/memory?host={tmp_path}", SECRET_KEY="test-only"
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "on"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        response = wait_for(f"http://127.0.0.1:{port}/healthz")
        assert response.status_code == 503
        assert response.json()["db"] == "error"
        assert response.json()["redis"] == "ok"
    finally:
        server.terminate()
        server.wait(timeout=30)
    # A clean SIGTERM also stops the embedded Redis this server started.
    assert is_running(Runtime((tmp_path / "data").resolve(), postgres=False, redis=True))["redis"] is False


def _child_pids(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status

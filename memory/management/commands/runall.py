"""`make run`: migrate, bootstrap, then supervise the ASGI server, a Celery worker and Celery beat.

Children run in their own process groups. SIGINT, SIGTERM or SIGHUP (the terminal closed) stops them all
(SIGTERM, then SIGKILL after a grace period). A child that dies is restarted with backoff while the others
keep serving; only a crash loop (too many restarts in a short window) stops the whole service. The embedded
servers stop when the last process using them exits (config.embedded).

One instance per data directory: `runall.lock` is held by the supervisor and inherited by every child, so
even children orphaned by a killed supervisor keep it held, and a second start says what is running.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memory.embeddings.minilm import int8_model_prepared

logger = logging.getLogger("memory.runall")

GRACE_PERIOD_S = 15.0
BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
CRASH_LOOP_RESTARTS = 5
CRASH_LOOP_WINDOW_S = 120.0
FIRST_READY_WAIT_S = 30.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def child_commands() -> dict[str, list[str]]:
    python = sys.executable
    return {
        "web": [
            python, "-m", "uvicorn", "config.asgi:application", "--host", settings.HOST, "--port", str(settings.PORT),
            "--lifespan", "on", "--log-level", "info",
        ],
        "worker": [
            python, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO",
            "--concurrency", str(settings.WORKER_CONCURRENCY), "--hostname", "worker@%h",
        ],
        "beat": [
            python, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
            "--schedule", settings.CELERY_BEAT_SCHEDULE_FILENAME,
        ],
    }  # fmt: skip


def child_environments() -> dict[str, dict[str, str]]:
    """Each pool process of the worker embeds on its own share of the cores."""
    threads = max(1, (os.cpu_count() or 1) // max(1, settings.WORKER_CONCURRENCY))
    worker = {**os.environ}
    worker.setdefault("EMBEDDING_THREADS", str(threads))
    return {"worker": worker}


class Supervisor:
    """Starts the children, restarts one that dies (backoff doubling up to MAX_BACKOFF_S), and gives up on a
    crash loop: more than `crash_loop_restarts` restarts of one child within `crash_loop_window_s`."""

    def __init__(
        self,
        commands: dict[str, list[str]],
        environments: dict[str, dict[str, str]] | None = None,
        *,
        backoff_s: float = BACKOFF_S,
        crash_loop_restarts: int = CRASH_LOOP_RESTARTS,
        crash_loop_window_s: float = CRASH_LOOP_WINDOW_S,
        pass_fds: tuple[int, ...] = (),
        on_change: Any = None,
        first_ready: Callable[[], bool] | None = None,
    ) -> None:
        self.commands = commands
        self.first_ready = first_ready
        self.environments = environments or {}
        self.backoff_s = backoff_s
        self.crash_loop_restarts = crash_loop_restarts
        self.crash_loop_window_s = crash_loop_window_s
        self.pass_fds = pass_fds
        self.on_change = on_change
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.restarts: dict[str, int] = dict.fromkeys(commands, 0)
        self._deaths: dict[str, deque[float]] = {name: deque() for name in commands}
        self._due: dict[str, float] = {}  # name -> when to restart it
        self.stopping = False

    def _request_stop(self, signum: int, frame: Any) -> None:
        self.stopping = True

    def run(self, *, install_signals: bool = True) -> int:
        if install_signals:
            for signum in STOP_SIGNALS:
                signal.signal(signum, self._request_stop)
        self._start_all()
        exit_code = 0
        while not self.stopping:
            now = time.monotonic()
            for name, child in list(self.children.items()):
                exited = name not in self._due and child.poll() is not None
                if exited and not self._schedule_restart(name, child, now):
                    self.stopping, exit_code = True, 1
            for name, due in list(self._due.items()):
                if not self.stopping and now >= due:
                    del self._due[name]
                    self.restarts[name] += 1
                    self._start(name)
            time.sleep(0.2)
        self.stop_all()
        return exit_code

    def _start_all(self) -> None:
        """The first child alone until `first_ready` (the web server answers /healthz), then the rest. On two cores
        a worker and beat importing Django beside the web server doubled the time to the first /healthz; jobs wait
        in the queue meanwhile. A first child that dies, or takes longer than FIRST_READY_WAIT_S, holds nobody
        back."""
        names = list(self.commands)
        self._start(names[0])
        if self.first_ready is not None:
            first = self.children[names[0]]
            deadline = time.monotonic() + FIRST_READY_WAIT_S
            while not (self.stopping or first.poll() is not None or time.monotonic() > deadline or self.first_ready()):
                time.sleep(0.05)
        for name in names[1:]:
            self._start(name)

    def _start(self, name: str) -> None:
        self.children[name] = subprocess.Popen(
            self.commands[name], start_new_session=True, env=self.environments.get(name), pass_fds=self.pass_fds
        )
        if self.on_change is not None:
            self.on_change(self.children)

    def _schedule_restart(self, name: str, child: subprocess.Popen[bytes], now: float) -> bool:
        """False when the child is crash-looping and the service should stop."""
        deaths = self._deaths[name]
        deaths.append(now)
        while deaths and now - deaths[0] > self.crash_loop_window_s:
            deaths.popleft()
        # A dead worker can leave pool processes behind in its group: they go before the new one starts.
        _signal_group(child, signal.SIGKILL)
        if len(deaths) > self.crash_loop_restarts:
            logger.error("runall.crash_loop", extra={"child": name, "returncode": child.returncode})
            return False
        delay = min(MAX_BACKOFF_S, self.backoff_s * 2 ** (len(deaths) - 1))
        logger.error(
            "runall.child_exited",
            extra={"child": name, "returncode": child.returncode, "restartInSeconds": round(delay, 2)},
        )
        self._due[name] = now + delay
        return True

    def stop_all(self) -> None:
        logger.info("runall.stopping")
        for child in self.children.values():
            _signal_group(child, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_PERIOD_S
        for child in self.children.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
        for child in self.children.values():
            # Also reaps pool processes a worker left behind: the whole group goes.
            _signal_group(child, signal.SIGKILL)
            child.wait()
        logger.info("runall.stopped")


def _signal_group(child: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


class InstanceLock:
    """`runall.lock` in the data directory: held while this instance (or any child it started) lives. Its
    text lists the pids, so a second start can say what to stop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.set_inheritable(fd, True)
        self.fd = fd
        self.record({})
        return True

    def record(self, children: dict[str, subprocess.Popen[bytes]]) -> None:
        text = " ".join([f"runall={os.getpid()}", *(f"{name}={child.pid}" for name, child in children.items())])
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, text.encode() + b"\n", 0)

    def holders(self) -> str:
        with contextlib.suppress(OSError):
            return self.path.read_text().strip()
        return ""


def answers_health(host: str, port: int) -> bool:
    """The web server answered /healthz (any status: a database that is down is its to report). Its first answer
    also loads the URL configuration, which the worker's and beat's imports would otherwise slow down."""
    import http.client

    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", "/healthz")
        connection.getresponse().read()
        return True
    except OSError:
        return False
    finally:
        connection.close()


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no conflict
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


class Command(BaseCommand):
    help = "Run the whole service: migrations, first-start bootstrap, web, worker and beat."

    def handle(self, *args: Any, **options: Any) -> None:
        lock = InstanceLock(Path(settings.DATA_DIR) / "runall.lock")
        if not lock.acquire():
            raise CommandError(
                f"The service is already running on this data directory ({settings.DATA_DIR}); processes: "
                f"{lock.holders() or 'unknown'}. Stop it first (Ctrl-C in its terminal, or `kill -INT <runall pid>`; "
                "if only children are left, `kill <pid>` each), or use another MEMORY_DATA_DIR."
            )
        if port_in_use(settings.HOST, settings.PORT):
            raise CommandError(
                f"Port {settings.PORT} on {settings.HOST} is already in use by another program. Stop it, or start "
                "on another port: PORT=8001 make run."
            )
        call_command("migrate", interactive=False, verbosity=0)
        call_command("bootstrap_owner")
        int8_model_prepared()  # first start on this data directory: a few seconds, once
        logger.info("runall.starting", extra={"host": settings.HOST, "port": settings.PORT})
        supervisor = Supervisor(
            child_commands(),
            child_environments(),
            pass_fds=(lock.fd,),
            on_change=lock.record,
            first_ready=lambda: answers_health(settings.HOST, settings.PORT),
        )
        code = supervisor.run()
        if code:
            sys.exit(code)

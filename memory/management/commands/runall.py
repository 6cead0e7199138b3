"""`make run`: migrate, bootstrap, then supervise the ASGI server, a Celery worker and Celery beat.

Children run in their own process groups; SIGINT or SIGTERM stops them all (SIGTERM, then SIGKILL after a
grace period), and if one dies the rest are stopped too. The embedded servers stop when the last process
using them exits (config.embedded).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

logger = logging.getLogger("memory.runall")

GRACE_PERIOD_S = 15.0


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
    def __init__(self, commands: dict[str, list[str]], environments: dict[str, dict[str, str]] | None = None) -> None:
        self.commands = commands
        self.environments = environments or {}
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping = False

    def _request_stop(self, signum: int, frame: Any) -> None:
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGINT, self._request_stop)
        signal.signal(signal.SIGTERM, self._request_stop)
        for name, command in self.commands.items():
            self.children[name] = subprocess.Popen(command, start_new_session=True, env=self.environments.get(name))
        exit_code = 0
        while not self.stopping:
            for name, child in self.children.items():
                if child.poll() is not None:
                    logger.error("runall.child_exited", extra={"child": name, "returncode": child.returncode})
                    self.stopping, exit_code = True, 1
            time.sleep(0.2)
        self.stop_all()
        return exit_code

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
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signum)


class Command(BaseCommand):
    help = "Run the whole service: migrations, first-start bootstrap, web, worker and beat."

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("bootstrap_owner")
        logger.info("runall.starting", extra={"host": settings.HOST, "port": settings.PORT})
        code = Supervisor(child_commands(), child_environments()).run()
        if code:
            sys.exit(code)

"""Helpers for tests that run the real service in child processes."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def service_env(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        MEMORY_DATA_DIR=str(data_dir),
        HOST="127.0.0.1",
        PORT=str(port),
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def manage(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def wait_for(url: str, *, timeout: float = 90, until: str | None = None) -> httpx.Response:
    """GET url until it answers (and, if given, until `until` appears in the body)."""
    deadline = time.monotonic() + timeout
    last: Exception | str = "no answer"
    while time.monotonic() < deadline:
        try:
            response = httpx.get(url, timeout=5)
            if until is None or until in response.text:
                return response
            last = response.text
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.25)
    raise AssertionError(f"{url} did not become ready: {last}")


def child_env(database_name: str, **env_extra: str) -> dict[str, str]:
    """The environment of a child process (worker, server) that works on the test database and test Redis."""
    from django.conf import settings

    url = urlunsplit(urlsplit(settings.DATABASE_URL)._replace(path=f"/{database_name}"))
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        "DATABASE_URL": url,
        "REDIS_URL": settings.REDIS_URL,
        "SECRET_KEY": settings.SECRET_KEY,
        **env_extra,
    }


@contextlib.contextmanager
def celery_worker(database_name: str, **env_extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker on the test database and the test Redis, until the block ends."""
    from django.conf import settings

    from config.celery import app

    name = f"test-{uuid.uuid4().hex[:8]}@localhost"
    env = child_env(database_name, **env_extra)
    log = Path(settings.DATA_DIR) / f"worker-{name.split('@')[0]}.log"  # kept for reading a failed run
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO", "--concurrency", "1",
         "--hostname", name, "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not app.control.ping(destination=[name], timeout=0.5):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the Celery worker did not start")
        yield worker
    finally:
        stop(worker)


def stop(process: subprocess.Popen[Any]) -> None:
    """SIGTERM, and SIGKILL if it has not exited within 30 s."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass
class AsgiService:
    """uvicorn serving `config.asgi` (REST, MCP, the web UI and the `/ws/events/` websocket) on a loopback port,
    in a child process with `env` (usually `child_env`: the test database)."""

    port: int
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = field(default=None)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1",
             "--port", str(self.port), "--lifespan", "on"],
            cwd=ROOT, env=self.env, stdout=self.log.open("a"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_for(f"{self.url}/healthz", until='"db": "ok"')

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def served_on_test_database(log_name: str, **env_extra: str) -> Iterator[AsgiService]:
    """An `AsgiService` on the test database and Redis (`child_env` with `env_extra`) until the block ends; its log
    is `log_name` in the test data directory."""
    from django.conf import settings

    env = child_env(settings.DATABASES["default"]["NAME"], **env_extra)
    service = AsgiService(port=free_port(), env=env, log=Path(settings.DATA_DIR) / log_name)
    service.start()
    try:
        yield service
    finally:
        service.stop()

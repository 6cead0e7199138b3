"""Helpers for tests that run the real service in child processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

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

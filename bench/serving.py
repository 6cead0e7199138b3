"""The real service over HTTP for benchmarks: uvicorn on a free loopback port, on this process's data directory.

    with served() as url, httpx.Client(base_url=url, headers=bearer(read_token(user, "bench"))) as client:
        client.post("/query/search", json={"query": "..."})

Call after django.setup() and the embedded runtime started. The server inherits this process's environment, so
it works on the same database and Redis (the embedded ones of MEMORY_DATA_DIR, or DATABASE_URL / REDIS_URL).
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

if TYPE_CHECKING:
    from memory.models import User

ROOT = Path(__file__).resolve().parent.parent
READY_SECONDS = 90  # a cold start loads Django, the MCP app and the embedded runtime's lease


def read_token(user: User, label: str) -> str:
    """The secret of a new read-only REST token of `user`, issued by the token service (no rate limit to speak
    of: a benchmark asks faster than any assistant)."""
    from memory.access import Actor
    from memory.services.tokens import token_issue

    issued = token_issue(actor=Actor.system(), owner=user, label=label, scopes=["read"], rate_limit_per_minute=10**6)
    return issued.secret


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def redis_database(url: str, number: int) -> str:
    """The same Redis, another database (a server's caches apart from another's): `?db=N` on a socket's URL, the
    path `/N` on a TCP one; the rest of the URL as it was."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = [(name, value) for name, value in parse_qsl(parts.query) if name != "db"] + [("db", str(number))]
        return f"unix://{parts.path}?{urlencode(query)}"  # as written: urlunsplit would drop the empty host's //
    return urlunsplit(parts._replace(path=f"/{number}"))


@contextmanager
def served(
    root: Path = ROOT, *, app: str = "config.asgi:application", environment: dict[str, str] | None = None
) -> Iterator[str]:
    """uvicorn serving `app` (config.asgi's) until the block ends; yields its base URL once /healthz answers 200.
    Its log is uvicorn-<port>.log in the data directory. `root`: the checkout whose code it serves (default: this
    one); `environment`: variables added to this process's for the server."""
    from django.conf import settings

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a log line per request is noise in a benchmark
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = Path(settings.DATA_DIR) / f"uvicorn-{port}.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
             "--lifespan", "on", "--log-level", "warning", "--no-access-log"],
            cwd=root, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(environment or {})},
        )  # fmt: skip
        try:
            deadline = time.monotonic() + READY_SECONDS
            while not _healthy(url):
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"uvicorn did not start; see {log_path}")
                time.sleep(0.25)
            yield url
        finally:
            stop(server)


def stop(process: subprocess.Popen[Any], seconds: float = 60) -> None:
    """SIGTERM, and SIGKILL if it has not exited within `seconds`."""
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def until(predicate: Callable[[], object], what: str, timeout: float, every: float = 0.25) -> float:
    """Seconds until predicate() holds; gives up (SystemExit) after `timeout`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(every)
    raise SystemExit(f"gave up waiting for {what} after {timeout:.0f} s")

"""Where the fixed cost of a REST call goes: each part of `POST /whoami` timed alone, in-process, then the whole.

    .venv/bin/python bench/request_profile.py [--calls 500] [--profile]

On the data directory of bench/request_overhead.py (MEMORY_DATA_DIR, default var/bench-request; run that first).
Parts, each called `--calls` times after a warm-up (p50 in ms): the token lookup, the throttle, the Access build,
the ToolEvent write; then the whole request through Django's test Client (sync, no ASGI) and through the ASGI
application in this process (`config.asgi`, httpx's ASGI transport: Django's async handler, its thread hop and
the middleware). `--profile` adds cProfile's top functions of the test-Client path (the ASGI path runs the view
on other threads, which cProfile does not follow).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-request"))
os.environ.setdefault("DB_POOL", "1")  # as in the web process (config.asgi)


def p50(call: Callable[[], Any], count: int) -> float:
    for _ in range(min(50, count)):
        call()
    spent = []
    for _ in range(count):
        began = time.perf_counter()
        call()
        spent.append((time.perf_counter() - began) * 1000)
    return statistics.median(spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--profile", action="store_true")
    options = parser.parse_args()

    from django.db import close_old_connections
    from django.test import Client

    from bench.search_latency import USERNAME
    from config.asgi import application  # sets Django up and starts the embedded runtime
    from memory.access import Actor, access_for_token
    from memory.api.throttling import token_call_wait
    from memory.models import ChangeSurface, User
    from memory.services.telemetry import tool_event_record
    from memory.services.tokens import token_for_secret, token_issue

    user = User.objects.get(username=USERNAME)
    issued = token_issue(actor=Actor.system(), owner=user, label="bench-profile", scopes=["read"],
                         rate_limit_per_minute=10**7)  # fmt: skip
    secret, token = issued.secret, issued.token
    calls = options.calls
    parts: dict[str, float] = {}
    parts["token lookup (token_for_secret)"] = p50(lambda: token_for_secret(secret), calls)
    parts["throttle (token_call_wait)"] = p50(lambda: token_call_wait(token), calls)
    checked = token_for_secret(secret)  # as a request has it: checked, so its partitions may be kept too
    parts["Access (access_for_token)"] = p50(
        lambda: access_for_token(token=checked, user_id=None, partition_key=None, workspace=False,
                                 surface=ChangeSurface.REST), calls)  # fmt: skip

    def event() -> None:
        tool_event_record(owner=user, token=token, surface="rest", tool="whoami", partition_key="memory:personal",
                          status=200, error_code="", duration_ms=1, request_bytes=2, response_bytes=300)  # fmt: skip

    parts["ToolEvent write (tool_event_record)"] = p50(event, calls)
    close_old_connections()
    client = Client(headers={"Authorization": f"Bearer {secret}"}, SERVER_NAME="127.0.0.1")

    def whoami() -> None:
        assert client.post("/whoami", data="{}", content_type="application/json").status_code == 200

    parts["whole POST /whoami, test Client (sync)"] = p50(whoami, calls)
    parts["whole POST /whoami, ASGI in-process"] = asyncio.run(_asgi_p50(application, secret, calls))
    parts["whole GET /no-such-path (404), ASGI in-process"] = asyncio.run(
        _asgi_p50(application, "", calls, path="/no-such-path")
    )
    print("| part | p50 ms |\n|---|---:|")
    for name, spent in parts.items():
        print(f"| {name} | {spent:.2f} |")
    if options.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(calls):
            whoami()
        profile.disable()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(45)
        print(out.getvalue())


async def _asgi_p50(application: Any, secret: str, count: int, path: str = "/whoami") -> float:
    import httpx

    transport = httpx.ASGITransport(app=application)
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers) as client:

        async def one() -> None:
            if path == "/whoami":
                assert (await client.post(path, json={})).status_code == 200
            else:
                assert (await client.get(path)).status_code == 404

        for _ in range(min(50, count)):
            await one()
        spent = []
        for _ in range(count):
            began = time.perf_counter()
            await one()
            spent.append((time.perf_counter() - began) * 1000)
    return statistics.median(spent)


if __name__ == "__main__":
    main()

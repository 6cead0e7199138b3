"""The fixed cost of a call: REST endpoints and one MCP tool call over HTTP on loopback, against a real uvicorn.

    .venv/bin/python bench/request_overhead.py [--rounds 3] [--requests 300] [--claims 1000] [--compare PATH]

Times, after a warm-up, one request at a time on a kept-alive connection:
- `GET /no-such-path` without a token: the floor of uvicorn + Django and its middleware (the error shape's 404;
  `/healthz` is no floor: it pings Celery, which waits 0.5 s twice when no worker runs);
- `POST /whoami` with an empty body: authentication, throttle, Access, telemetry and nothing else;
- the floor and `/whoami` again through the standard library's http.client (the rows above use httpx, whose own
  work per call is part of their time: the difference is the client's, not the server's);
- `POST /partitions/list`: a cheap read (one selector);
- `POST /scratchpad/read` and `tools/call read_scratchpad`: the same cheap read over REST and MCP (their
  difference is the MCP layer's own cost, without a search's noise);
- `POST /query/search` over REST, and `tools/call search_memory` with the same queries through the MCP SDK's
  client over Streamable HTTP `/mcp` (one session opened before the clock starts; each call timed).
Each round times every path in turn; p50/p95 are per round and the table gives their median over rounds, with
the MCP-minus-REST difference of the search p50 (the same queries, the same token).

With `--compare PATH` a second uvicorn serves the code checked out at PATH (same data, same token) and every path
is timed on both, interleaved, so a before/after ratio holds on a noisy machine; e.g. for main:
`git archive main | tar -x -C /tmp/main-code` then `--compare /tmp/main-code`.

The data directory (MEMORY_DATA_DIR, default var/bench-request) gets, on first use, one user with a small store
of generated claims (bench/search_latency.py's statements and MiniLM vectors); later runs reuse it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import itertools
import json
import logging
import os
import platform
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

from bench.report import headline  # noqa: E402

WARM_UP = 30
QUERIES = 50  # distinct search queries, cycled


def seeded(claims: int) -> Any:
    """The benchmark's user, with `claims` generated claims (built once per data directory)."""
    from bench.search_latency import USERNAME, build
    from memory.models import Claim, User

    user = User.objects.filter(username=USERNAME).first()
    if user is None or Claim.objects.filter(owner=user).count() != claims:
        base = Path(os.environ["MEMORY_DATA_DIR"]).resolve()
        build(claims, base)
        user = User.objects.get(username=USERNAME)
    return user


def percentiles(spent: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(spent, n=100)
    return {"p50": statistics.median(spent), "p95": cuts[94]}


def timed(call: Callable[[], Any], count: int) -> list[float]:
    spent = []
    for _ in range(count):
        began = time.perf_counter()
        call()
        spent.append((time.perf_counter() - began) * 1000)
    return spent


class Rest:
    def __init__(self, url: str, secret: str) -> None:
        import httpx

        from bench.serving import bearer

        self.client = httpx.Client(base_url=url, headers=bearer(secret), timeout=60)
        self.anonymous = httpx.Client(base_url=url, timeout=60)

    def post(self, path: str, body: dict[str, Any]) -> None:
        self.client.post(path, json=body).raise_for_status()

    def not_found(self) -> None:
        if self.anonymous.get("/no-such-path").status_code != 404:
            raise SystemExit("GET /no-such-path did not answer 404")


class LeanRest:
    """The same calls through the standard library's http.client on one kept-alive connection: next to nothing of
    the client's own work in the time (httpx's request and response models cost ~1 ms a call on a slow CPU), so the
    row is the server's fixed cost as a load generator such as wrk would see it."""

    def __init__(self, url: str, secret: str) -> None:
        from urllib.parse import urlsplit

        from bench.serving import bearer

        address = urlsplit(url)
        self.connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=60)
        self.headers = {**bearer(secret), "Content-Type": "application/json"}

    def post(self, path: str, body: dict[str, Any]) -> None:
        status = self._exchange("POST", path, json.dumps(body).encode(), self.headers)
        if status != 200:
            raise SystemExit(f"POST {path} answered {status}")

    def not_found(self) -> None:
        if self._exchange("GET", "/no-such-path", None, {}) != 404:
            raise SystemExit("GET /no-such-path did not answer 404")

    def _exchange(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> int:
        """One request; once more on a new connection where the server closed the kept-alive one while the other
        paths were timed (uvicorn's keep-alive timeout), as httpx does by itself."""
        try:
            return self._send(method, path, body, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.connection.close()
            return self._send(method, path, body, headers)

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> int:
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        response.read()
        return response.status

    def close(self) -> None:
        self.connection.close()


class Mcp:
    """The official SDK client over /mcp, on an event loop of its own; one session for the whole run."""

    def __init__(self, url: str, secret: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.url, self.secret = url, secret
        self.session: Any = None
        self._closing: asyncio.Future[None] | None = None
        self._task = self.loop.create_task(self._hold())
        while self.session is None:
            self.loop.run_until_complete(asyncio.sleep(0.01))
            if self._task.done():
                self._task.result()

    async def _hold(self) -> None:
        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        self._closing = self.loop.create_future()
        headers = {"Authorization": f"Bearer {self.secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(f"{self.url}/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            self.session = session
            await self._closing

    def search(self, query: str) -> None:
        self.call("search_memory", {"query": query})

    def call(self, tool: str, arguments: dict[str, Any]) -> None:
        result = self.loop.run_until_complete(self.session.call_tool(tool, arguments))
        if result.is_error:
            raise SystemExit(f"{tool} failed: {result.content}")

    def close(self) -> None:
        assert self._closing is not None
        self._closing.set_result(None)
        self.loop.run_until_complete(self._task)
        self.loop.close()


def measure(options: argparse.Namespace) -> dict[str, Any]:
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from bench.search_latency import queries, statements
    from bench.serving import served
    from config.embedded import ensure_started
    from memory.access import Actor
    from memory.services.tokens import token_issue

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    user = seeded(options.claims)
    # A read token with the assistant profile (search_memory is in it); no rate limit to speak of.
    secret = token_issue(
        actor=Actor.system(), owner=user, label="bench-request", scopes=["read"], rate_limit_per_minute=10**6
    ).secret
    asked = queries(QUERIES, statements(min(options.claims, 10_000)))
    roots = {"this checkout": ROOT, **({"--compare": Path(options.compare).resolve()} if options.compare else {})}
    load = os.getloadavg()[0]
    rounds: dict[tuple[str, str], list[dict[str, float]]] = {}
    with contextlib.ExitStack() as stack:
        paths = {code: _paths(stack.enter_context(served(root)), secret, asked, stack) for code, root in roots.items()}
        logging.getLogger("httpx2").setLevel(logging.WARNING)  # the MCP client's transport logs every request
        for per_code in paths.values():
            for call in per_code.values():
                timed(call, WARM_UP)
        for _ in range(options.rounds):
            for name in PATHS:
                for code, per_code in paths.items():  # interleaved: the machine's load falls on both alike
                    rounds.setdefault((name, code), []).append(percentiles(timed(per_code[name], options.requests)))
    summary = {
        key: {cut: statistics.median(found[cut] for found in per_round) for cut in ("p50", "p95")}
        for key, per_round in rounds.items()
    }

    def gap(mcp_path: str, rest_path: str, code: str) -> float:
        pairs = zip(rounds[(mcp_path, code)], rounds[(rest_path, code)], strict=True)
        return statistics.median(mcp["p50"] - rest["p50"] for mcp, rest in pairs)

    gaps = {code: gap(PATHS[-1], PATHS[-2], code) for code in roots}
    small = {code: gap(PATHS[-3], PATHS[-4], code) for code in roots}
    return {"summary": summary, "gaps": gaps, "small_gaps": small, "codes": list(roots),
            "load": (load, os.getloadavg()[0])}  # fmt: skip


# A cheap read over REST and as an MCP tool (the difference is the MCP layer's own cost), then search both ways.
# The floor and /whoami through http.client as well (LeanRest). The MCP rows stay last: the gaps read PATHS[-4:].
LEAN_FLOOR, LEAN_WHOAMI = "GET /no-such-path, http.client", "POST /whoami, http.client"
PATHS = ("GET /no-such-path (no token, 404)", "POST /whoami", LEAN_FLOOR, LEAN_WHOAMI, "POST /partitions/list",
         "POST /scratchpad/read", "MCP tools/call read_scratchpad", "POST /query/search",
         "MCP tools/call search_memory")  # fmt: skip


def _paths(url: str, secret: str, asked: list[str], stack: contextlib.ExitStack) -> dict[str, Callable[[], None]]:
    rest, lean, mcp = Rest(url, secret), LeanRest(url, secret), Mcp(url, secret)
    stack.callback(mcp.close)
    stack.callback(lean.close)
    rest_queries, mcp_queries = itertools.cycle(asked), itertools.cycle(asked)  # the same queries in the same order
    calls: list[Callable[[], None]] = [
        rest.not_found,
        lambda: rest.post("/whoami", {}),
        lean.not_found,
        lambda: lean.post("/whoami", {}),
        lambda: rest.post("/partitions/list", {}),
        lambda: rest.post("/scratchpad/read", {}),
        lambda: mcp.call("read_scratchpad", {}),
        lambda: rest.post("/query/search", {"query": next(rest_queries)}),
        lambda: mcp.search(next(mcp_queries)),
    ]
    return dict(zip(PATHS, calls, strict=True))


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())  # fmt: skip
    python = platform.python_version()
    return f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, Python {python}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=300, help="timed requests per path and round")
    parser.add_argument("--claims", type=int, default=1000, help="claims in the store searched")
    parser.add_argument(
        "--compare",
        metavar="PATH",
        help="also serve the code checked out at PATH (e.g. `git worktree add PATH main`) "
        "on the same data, and time both interleaved in one run: before and after a change",
    )
    options = parser.parse_args()
    result = measure(options)
    codes = result["codes"]
    print(
        f"\n## Request overhead (`bench/request_overhead.py`)\n\nMachine: {machine()}. {options.claims} claims, "
        f"{options.rounds} rounds of {options.requests} requests per path; load average "
        f"{result['load'][0]:.2f} -> {result['load'][1]:.2f}. In ms, the median over rounds of each round's "
        "percentile.\n"
    )
    print("| path | " + " | ".join(f"{code} p50 | {code} p95" for code in codes) + " |")
    print("|---|" + "---:|---:|" * len(codes))
    for name in PATHS:
        found = [result["summary"][(name, code)] for code in codes]
        print(f"| {name} | " + " | ".join(f"{f['p50']:.1f} | {f['p95']:.1f}" for f in found) + " |")
    for code in codes:
        print(f"\nMCP search_memory minus REST /query/search, p50 ({code}): {result['gaps'][code]:+.1f} ms; "
              f"read_scratchpad minus /scratchpad/read: {result['small_gaps'][code]:+.1f} ms")  # fmt: skip
    code = codes[0]
    headline(
        "POST /whoami p50 over HTTP (httpx client)", result["summary"][("POST /whoami", code)]["p50"], "ms", "<= 5"
    )
    headline("POST /whoami p50 over HTTP (http.client)", result["summary"][(LEAN_WHOAMI, code)]["p50"], "ms", "<= 5")
    headline("MCP search_memory minus REST search, p50", result["gaps"][code], "ms", "<= 5")


if __name__ == "__main__":
    main()

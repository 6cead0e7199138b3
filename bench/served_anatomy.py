"""Where a served search's time goes: `POST /query/search` and `POST /whoami` through a real uvicorn, each part of
the request timed inside the server.

    .venv/bin/python bench/served_anatomy.py ../shared/bench/locomo-dev.json [--sample conv-26] [--rounds 2]

On bench/locomo.py's data directory (MEMORY_DATA_DIR, default var/bench-locomo; the conversation ingested through
the real pipeline on first use, as bench/search_profile.py does), or on a store bench/peers.py left behind
(`MEMORY_DATA_DIR=var/peers/round-1/ours ... --user peers`). uvicorn serves this module's `application`:
config.asgi's, with a clock read at each boundary of a request. The driver asks every question of categories 1-4
(`limit: 10`, as peers.py does), each followed by a `/whoami`, one request at a time, and prints the median of
each part per path and the client's round trip (httpx, as peers.py's). What is outside the server is the client
library, the loopback and uvicorn's parsing. Each clock read costs about a microsecond: the server's total is a
little above an uninstrumented server's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

TIMED_PATHS = ("/query/search", "/whoami")
TIMINGS_PATH = "/__served_anatomy__"  # served by this module's application only
LIMIT = 10
# Each part: the clock reads it lies between (the first read of each name in a request).
# The hops between the event loop and the request's thread, and the answer's sending: the same for every call.
_TO_THREAD = [("event loop to the request's thread", "asgi", "thread")]
_FROM_THREAD = [
    ("the request's thread to the event loop", "thread_end", "send"),
    ("the answer sent", "send", "asgi_end"),
]
PARTS = [
    *_TO_THREAD,
    ("Django's handler, middleware, URL, DRF set-up", "thread", "initial"),
    ("authentication and throttle", "initial", "initial_end"),
    ("validation of the body", "initial_end", "parse_end"),
    ("the Access", "parse_end", "access_end"),
    ("the service call (search(); whoami: its handle)", "access_end", "service_end"),
    ("the answer built (results as JSON and formattedResult; whoami: its serializer)", "service_end", "finalize"),
    ("rendered to JSON, ToolEvent queued", "finalize", "finalize_end"),
    ("middleware out, request_finished", "finalize_end", "thread_end"),
    *_FROM_THREAD,
]
# The same for a call the fast lane answered (memory.api.lane: the body is checked before the token there).
LANE_PARTS = [
    *_TO_THREAD,
    ("Django's request, the lane's checks", "thread", "lane_checked"),
    ("the body parsed and validated", "lane_checked", "lane_auth"),
    ("authentication and throttle", "lane_auth", "lane_verdict"),
    ("the Access", "lane_verdict", "access_end"),
    ("the service call (search())", "access_end", "service_end"),
    ("the answer built, rendered to JSON, its headers", "service_end", "lane_record"),
    ("ToolEvent queued", "lane_record", "lane_record_end"),
    ("request_finished", "lane_record_end", "thread_end"),
    *_FROM_THREAD,
]


# The instrumented application (imported by the uvicorn this script starts, never by the service).
_clocks = threading.local()
_records: list[tuple[str, dict[str, float]]] = []


def _read(name: str) -> None:
    clock = getattr(_clocks, "current", None)
    if clock is not None:
        clock.setdefault(name, time.perf_counter())


def _replaced(owner: Any, name: str, function: Any) -> None:
    setattr(owner, name, function)  # a method replaced by name (an assignment would be typed as the method's)


def _timed(owner: Any, name: str, before: str | None, after: str) -> None:
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        if before:
            _read(before)
        try:
            return original(*args, **kwargs)
        finally:
            _read(after)

    _replaced(owner, name, timed)


def _instrumented() -> Any:
    from config.asgi import application as served
    from config.handler import OneHopHandler
    from memory.api import lane, recall
    from memory.api.base import Endpoint
    from memory.api.views import Whoami

    respond = OneHopHandler._respond

    def timed_respond(handler: Any, scope: dict[str, Any], body: Any) -> Any:
        _clocks.current = scope.get("anatomy")
        _read("thread")
        try:
            response = respond(handler, scope, body)
            setattr(response, "anatomy", _clocks.current)  # noqa: B010  (the event loop's side reads it from the answer)
            return response
        finally:
            _read("thread_end")
            _clocks.current = None

    _replaced(OneHopHandler, "_respond", timed_respond)
    _timed(Endpoint, "initial", "initial", "initial_end")
    _timed(Endpoint, "parse", None, "parse_end")
    _timed(Endpoint, "build_access", None, "access_end")
    _timed(recall, "search", None, "service_end")  # the search endpoint's service call
    _timed(Whoami, "handle", None, "service_end")  # its handle is the service call
    _timed(lane.FastLane, "_ordinary", None, "lane_checked")
    _timed(lane, "token_call_for_secret", "lane_auth", "lane_auth_end")
    _timed(lane, "rate_verdict", None, "lane_verdict")
    _timed(lane, "rest_access", None, "access_end")
    _timed(lane, "call_record", "lane_record", "lane_record_end")
    send_response = OneHopHandler.send_response

    async def timed_send(handler: Any, response: Any, send: Any) -> None:
        clock = getattr(response, "anatomy", None)
        if clock is not None:
            clock.setdefault("send", time.perf_counter())
        await send_response(handler, response, send)

    _replaced(OneHopHandler, "send_response", timed_send)
    finalize = Endpoint.finalize_response

    def timed_finalize(view: Any, request: Any, response: Any, *args: Any, **kwargs: Any) -> Any:
        _read("finalize")
        response = finalize(view, request, response, *args, **kwargs)
        _read("finalize_end")
        return response

    _replaced(Endpoint, "finalize_response", timed_finalize)

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == TIMINGS_PATH:
            body = json.dumps(_records).encode()
            _records.clear()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] != "http" or scope["path"] not in TIMED_PATHS:
            await served(scope, receive, send)
            return
        clock = {"asgi": time.perf_counter()}
        scope["anatomy"] = clock
        await served(scope, receive, send)
        clock["asgi_end"] = time.perf_counter()
        _records.append((scope["path"], clock))

    return application


if os.environ.get("SERVED_ANATOMY") == "1":
    application = _instrumented()


# The driver.
def asked(url: str, secret: str, questions: list[str], rounds: int) -> tuple[dict[str, list[float]], list[Any]]:
    import httpx

    from bench.serving import bearer

    client_ms: dict[str, list[float]] = defaultdict(list)
    with httpx.Client(base_url=url, headers=bearer(secret), timeout=60) as client:
        for question in questions[:20]:  # warm: the model's first run, the pool's connections
            client.post("/query/search", json={"query": question, "limit": LIMIT}).raise_for_status()
        client.get(TIMINGS_PATH)
        for _ in range(rounds):
            for question in questions:
                for path, body in (("/query/search", {"query": question, "limit": LIMIT}), ("/whoami", {})):
                    began = time.perf_counter()
                    client.post(path, json=body).raise_for_status()
                    client_ms[path].append((time.perf_counter() - began) * 1000)
        records = client.get(TIMINGS_PATH).json()
    return client_ms, records


def report(client_ms: dict[str, list[float]], records: list[Any]) -> None:
    for path in TIMED_PATHS:
        clocks = [clock for name, clock in records if name == path]
        laned = sum("lane_checked" in clock for clock in clocks)
        by_lane = f", {laned} answered by the fast lane" if laned else ""
        print(f"\n{path}: {len(clocks)} requests{by_lane}, p50 (ms)\n\n| part | p50 |\n|---|---:|")
        for label, start, end in LANE_PARTS if laned > len(clocks) / 2 else PARTS:
            spent = [(clock[end] - clock[start]) * 1000 for clock in clocks if start in clock and end in clock]
            if spent:
                print(f"| {label} | {statistics.median(spent):.3f} |")
        inside = statistics.median((clock["asgi_end"] - clock["asgi"]) * 1000 for clock in clocks)
        client = statistics.median(client_ms[path])
        print(f"| **in the server** | **{inside:.3f}** |")
        print(f"| outside it (client, loopback, uvicorn's parsing) | {client - inside:.3f} |")
        print(f"| **the client's round trip** | **{client:.3f}** |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--sample", default="conv-26")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--user", help="an existing user's memory (bench/peers.py's store: peers) instead of LoCoMo's")
    options = parser.parse_args()
    os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-locomo"))  # the server inherits it
    from bench.locomo import asked_qa, ingest_all, sample_named

    sample = sample_named(options.data, options.sample)  # before anything is started

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from bench.serving import read_token, served
    from config.embedded import ensure_started
    from memory.models import User

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    user = User.objects.get(username=options.user) if options.user else ingest_all([sample], reuse=True)[options.sample]
    questions = [qa["question"] for qa, _ in asked_qa(sample)]
    secret = read_token(user, "served-anatomy")
    connections.close_all()
    load = os.getloadavg()[0]
    with served(app="bench.served_anatomy:application", environment={"SERVED_ANATOMY": "1"}) as url:
        client_ms, records = asked(url, secret, questions, options.rounds)
    print(f"{options.sample}: {len(questions)} questions x {options.rounds} rounds, each followed by /whoami; load "
          f"average {load:.2f} -> {os.getloadavg()[0]:.2f}")  # fmt: skip
    report(client_ms, records)


if __name__ == "__main__":
    main()

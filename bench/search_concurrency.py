"""Several assistants searching one memory at once: `POST /query/search` to one uvicorn serving config.asgi (the web
process of `make run`), from 1, 2, 4 and 8 clients at a time.

    .venv/bin/python bench/search_concurrency.py ../shared/bench/locomo-dev.json [--clients 1 2 4 8] [--seconds 10]

On bench/locomo.py's data directory (MEMORY_DATA_DIR, default var/bench-locomo): LoCoMo conv-26 ingested through the
real pipeline on first use (bench/locomo.py's `ingest_all`), reused after. Each client is a thread of this process
with a keep-alive connection of its own (the standard library's http.client, the lightest client: this process
shares the two cores with the server) and asks the questions of categories 1-4 (`limit: 10`) in turn, each client
from another question, for `--seconds` a level after one warm-up round of every question. Per level: searches
answered a second, the round trip's p50 / p95 / p99, answers other than 200, and the throughput against one
client's, and the CPU a search took in each part (the server, PostgreSQL, Redis, this client; from /proc, so other
load on the machine does not count). Then the warnings and errors the server logged while it served (work its recall
threads dropped, a pool that ran out), by event.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-locomo"))

from bench.report import headline  # noqa: E402

LIMIT = 10


def percentile(values: list[float], cut: int) -> float:
    return statistics.quantiles(values, n=100)[cut - 1] if len(values) > 1 else values[0]


def asked(url: str, secret: str, questions: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """`clients` threads asking in turn until `seconds` have passed: the answers' round trips (ms) and statuses."""
    address = urlsplit(url)
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    spent: list[float] = []
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(number: int) -> None:
        connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=120)
        mine: list[float] = []
        codes: Counter[int] = Counter()
        turn = number * len(questions) // clients
        start.wait()
        while time.monotonic() < deadline[0]:
            body = json.dumps({"query": questions[turn % len(questions)], "limit": LIMIT})
            began = time.perf_counter()
            connection.request("POST", "/query/search", body, headers)
            response = connection.getresponse()
            response.read()
            mine.append((time.perf_counter() - began) * 1000)
            codes[response.status] += 1
            turn += 1
        connection.close()
        with lock:
            spent.extend(mine)
            statuses.update(codes)

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    deadline[0] = time.monotonic() + seconds
    began = time.monotonic()
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    return {"clients": clients, "per_second": len(spent) / elapsed, "p50": statistics.median(spent),
            "p95": percentile(spent, 95), "p99": percentile(spent, 99),
            "not_ok": sum(count for status, count in statuses.items() if status != 200)}  # fmt: skip


def cpu_seconds(runtime: Any) -> dict[str, float]:
    """CPU seconds (user and system) each part has used so far: the server (this process's children), PostgreSQL (its
    postmaster and every backend), Redis, and this process, the clients."""
    import psutil

    def used(process: psutil.Process, with_children: bool = False) -> float:
        try:
            each = [process, *(process.children(recursive=True) if with_children else [])]
            return sum(sum(part.cpu_times()[:2]) for part in each)
        except psutil.Error:  # a backend that ended between the listing and the reading
            return 0.0

    me = psutil.Process()
    postmaster = psutil.Process(int((runtime.pgdata / "postmaster.pid").read_text().split()[0]))
    redis = psutil.Process(int((runtime.redis_dir / "redis.pid").read_text().split()[0]))
    return {"server": sum(used(child, True) for child in me.children()), "PostgreSQL": used(postmaster, True),
            "Redis": used(redis), "clients": used(me)}  # fmt: skip


def logged(log: Path, since: int) -> Counter[str]:
    """Warnings and errors in the server's JSON log after byte `since`, by event (a line not JSON: by its start)."""
    found: Counter[str] = Counter()
    with log.open("rb") as lines:
        lines.seek(since)
        for raw in lines:
            line = raw.decode(errors="replace").strip()
            try:
                record = json.loads(line)
            except ValueError:
                if line and ("Error" in line or "WARNING" in line or "ERROR" in line):
                    found[line[:80]] += 1
                continue
            if isinstance(record, dict) and record.get("level") in ("warning", "error", "critical"):
                found[str(record.get("event"))] += 1
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--sample", default="conv-26")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--seconds", type=float, default=10.0, help="asked for this long at each level")
    options = parser.parse_args()
    from bench.locomo import asked_qa, ingest_all, sample_named

    sample = sample_named(options.data, options.sample)

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from bench.search_latency import machine
    from bench.serving import read_token, served
    from config.embedded import ensure_started

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    user = ingest_all([sample], reuse=True)[options.sample]
    questions = [qa["question"] for qa, _ in asked_qa(sample)]
    secret = read_token(user, "search-concurrency")
    connections.close_all()  # this process is a client from here on
    load = [os.getloadavg()[0]]
    levels = []
    with served() as url:
        log = next(Path(settings.DATA_DIR).glob(f"uvicorn-{urlsplit(url).port}.log"))
        for question in questions:  # one warm-up round: the model's first runs, the counts of every word
            connection = http.client.HTTPConnection("127.0.0.1", urlsplit(url).port, timeout=120)
            body = json.dumps({"query": question, "limit": LIMIT})
            connection.request("POST", "/query/search", body, {"Authorization": f"Bearer {secret}"})
            connection.getresponse().read()
            connection.close()
        since = log.stat().st_size
        for clients in options.clients:
            before = cpu_seconds(settings.EMBEDDED_RUNTIME)
            levels.append(asked(url, secret, questions, clients, options.seconds))
            after = cpu_seconds(settings.EMBEDDED_RUNTIME)
            answered = levels[-1]["per_second"] * options.seconds
            levels[-1]["cpu"] = {part: 1000 * (after[part] - before[part]) / answered for part in after}
            load.append(os.getloadavg()[0])
            found = levels[-1]
            print(f"{clients} client(s): {found['per_second']:.1f} searches/s, p50 {found['p50']:.1f} ms, "
                  f"p95 {found['p95']:.1f} ms", flush=True)  # fmt: skip
        events = logged(log, since)
    one = levels[0]["per_second"]
    loads = ", ".join(f"{value:.1f}" for value in load)
    print(f"\n## Searches from several clients at once (`bench/search_concurrency.py`)\n\nMachine: {machine()}. LoCoMo "
          f"{options.sample}: {len(questions)} questions, `limit: {LIMIT}`, one uvicorn (config.asgi, WEB_THREADS "
          f"{settings.WEB_THREADS}, DB_POOL_MAX_SIZE {settings.DB_POOL_MAX_SIZE}), {options.seconds:.0f} s a level. "
          f"Load average (1 min) at the start and after each level: {loads}.\n")  # fmt: skip
    parts = list(levels[0]["cpu"])
    print("| clients | searches/s | x one client's | p50 ms | p95 ms | p99 ms | answers not 200 | CPU ms a search: "
          + ", ".join(parts) + " |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for found in levels:
        cells = [f"{found['per_second']:.1f}", f"{found['per_second'] / one:.2f}",
                 *(f"{found[cut]:.1f}" for cut in ("p50", "p95", "p99")), str(found["not_ok"]),
                 " / ".join(f"{found['cpu'][part]:.2f}" for part in parts)]  # fmt: skip
        print(f"| {found['clients']} | " + " | ".join(cells) + " |")
    shown = ", ".join(f"{event} x{count}" for event, count in events.most_common()) or "none"
    print(f"\nWarnings and errors the server logged while asked: {shown}")
    for found in levels:
        if found["clients"] in (1, 4):
            label = f"{found['clients']} client{'s' if found['clients'] > 1 else ''} at once"
            headline(f"searches a second, {label}", found["per_second"], "/s")
            headline(f"search p95 over HTTP, {label}", found["p95"], "ms")
    headline("answers not 200 under concurrent searches", sum(found["not_ok"] for found in levels), "")


if __name__ == "__main__":
    main()

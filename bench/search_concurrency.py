"""Several assistants searching one memory at once: `POST /query/search` to one uvicorn serving config.asgi (the web
process of `make run`), from 1, 2, 4 and 8 clients at a time.

    .venv/bin/python bench/search_concurrency.py ../shared/bench/locomo-dev.json [--clients 1 2 4 8] [--seconds 10]

On bench/locomo.py's data directory (MEMORY_DATA_DIR, default var/bench-locomo): LoCoMo conv-26 ingested through the
real pipeline on first use (bench/locomo.py's `ingest_all`), reused after. Each client is a thread of this process
with a keep-alive connection of its own (the standard library's http.client, the lightest client: this process
shares the two cores with the server) and asks the questions of categories 1-4 (`limit: 10`) in turn, each client
from another question, for `--seconds` a level after one warm-up round of every question. Per level: searches
answered a second, the round trip's p50 / p95 / p99, answers other than 200 (a status, or a connection that failed),
the throughput against one client's, and the CPU a search took in each part (the server, PostgreSQL, Redis, this
client; from /proc, so other load on the machine does not count). Then the warnings and errors the server logged
while it served (work its recall threads dropped, a pool that ran out), by event.
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

from bench.report import headline, percentile  # noqa: E402

LIMIT = 10


def asked(url: str, secret: str, questions: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """`clients` threads asking in turn until `seconds` have passed: searches answered a second, the round trips (ms),
    how many were answered, and how many were not answered 200 (a status, or a connection that failed: counted, and
    a new connection made)."""
    address = urlsplit(url)
    spent: list[float] = []
    failed: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(number: int) -> None:
        connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=120)
        mine: list[float] = []
        not_ok: Counter[str] = Counter()
        turn = number * len(questions) // clients
        start.wait()
        try:
            while time.monotonic() < deadline[0]:
                began = time.perf_counter()
                try:
                    status = searched(connection, secret, questions[turn % len(questions)])
                except (OSError, http.client.HTTPException) as error:
                    not_ok[type(error).__name__] += 1
                    connection.close()  # http.client opens it again on the next request
                else:
                    mine.append((time.perf_counter() - began) * 1000)
                    if status != 200:
                        not_ok[str(status)] += 1
                turn += 1
        finally:
            connection.close()
            with lock:
                spent.extend(mine)
                failed.update(not_ok)

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    deadline[0] = time.monotonic() + seconds
    began = time.monotonic()
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    if not spent:
        raise SystemExit(f"no search answered with {clients} client(s): {dict(failed)}")
    return {"clients": clients, "answered": len(spent), "per_second": len(spent) / elapsed,
            "p50": statistics.median(spent), "p95": percentile(spent, 95), "p99": percentile(spent, 99),
            "not_ok": sum(failed.values()), "failures": dict(failed)}  # fmt: skip


def searched(connection: http.client.HTTPConnection, secret: str, question: str) -> int:
    """One `POST /query/search` on `connection`; its status."""
    body = json.dumps({"query": question, "limit": LIMIT})
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    connection.request("POST", "/query/search", body, headers)
    response = connection.getresponse()
    response.read()
    return response.status


def cpu_seconds(runtime: Any) -> dict[str, float]:
    """CPU seconds (user and system) each part has used so far: the server (this process's children), PostgreSQL (its
    postmaster and every backend), Redis, and this process, the clients. Each process's own, and its children's that
    have ended (a backend that ended is in its postmaster's); one that ends while read counts 0."""
    import psutil

    def used(process: psutil.Process, with_children: bool = False) -> float:
        try:
            each = [process, *(process.children(recursive=True) if with_children else [])]
        except psutil.Error:
            return 0.0
        total = 0.0
        for part in each:
            try:
                total += sum(part.cpu_times()[:4])  # user, system, and the same of its children that ended
            except psutil.Error:  # ended between the listing and the reading
                continue
        return total

    me = psutil.Process()
    postmaster = psutil.Process(int((runtime.pgdata / "postmaster.pid").read_text().split()[0]))
    redis = psutil.Process(int((runtime.redis_dir / "redis.pid").read_text().split()[0]))
    return {"server": sum(used(child, True) for child in me.children()), "PostgreSQL": used(postmaster, True),
            "Redis": used(redis), "clients": sum(me.cpu_times()[:2])}  # fmt: skip


def logged(log: Path, since: int) -> Counter[str]:
    """Warnings and errors in the server's JSON log after byte `since`, by event (uvicorn's own lines and a traceback,
    which are not JSON: by their start)."""
    found: Counter[str] = Counter()
    with log.open("rb") as lines:
        lines.seek(since)
        for raw in lines:
            line = raw.decode(errors="replace").strip()
            try:
                record = json.loads(line)
            except ValueError:
                if line.startswith(("Traceback", "ERROR", "WARNING")):  # uvicorn's own lines; a traceback once
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
        log = Path(settings.DATA_DIR) / f"uvicorn-{urlsplit(url).port}.log"  # bench/serving.py's
        connection = http.client.HTTPConnection("127.0.0.1", urlsplit(url).port, timeout=120)
        for question in questions:  # one warm-up round: the model's first runs, the counts of every word
            if (status := searched(connection, secret, question)) != 200:
                raise SystemExit(f"the warm-up's search was answered {status}; see {log}")
        connection.close()
        since = log.stat().st_size
        for clients in options.clients:
            before = cpu_seconds(settings.EMBEDDED_RUNTIME)
            levels.append(asked(url, secret, questions, clients, options.seconds))
            after = cpu_seconds(settings.EMBEDDED_RUNTIME)
            answered = levels[-1]["answered"]
            levels[-1]["cpu"] = {part: 1000 * (after[part] - before[part]) / answered for part in after}
            load.append(os.getloadavg()[0])
            found = levels[-1]
            print(f"{clients} client(s): {found['per_second']:.1f} searches/s, p50 {found['p50']:.1f} ms, "
                  f"p95 {found['p95']:.1f} ms", flush=True)  # fmt: skip
        events = logged(log, since)
    base = next((found for found in levels if found["clients"] == 1), levels[0])  # one client's, else the first level's
    loads = ", ".join(f"{value:.1f}" for value in load)
    print(f"\n## Searches from several clients at once (`bench/search_concurrency.py`)\n\nMachine: {machine()}. LoCoMo "
          f"{options.sample}: {len(questions)} questions, `limit: {LIMIT}`, one uvicorn (config.asgi, WEB_THREADS "
          f"{settings.WEB_THREADS}, DB_POOL_MAX_SIZE {settings.DB_POOL_MAX_SIZE}), {options.seconds:.0f} s a level. "
          f"Load average (1 min) at the start and after each level: {loads}.\n")  # fmt: skip
    parts = list(levels[0]["cpu"])
    print(f"| clients | searches/s | x {base['clients']} client(s)' | p50 ms | p95 ms | p99 ms | answers not 200 | "
          f"CPU ms a search: {', '.join(parts)} |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for found in levels:
        cells = [f"{found['per_second']:.1f}", f"{found['per_second'] / base['per_second']:.2f}",
                 *(f"{found[cut]:.1f}" for cut in ("p50", "p95", "p99")),
                 f"{found['not_ok']} {found['failures']}" if found["not_ok"] else "0",
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

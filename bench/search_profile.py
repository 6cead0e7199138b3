"""Where one search of a small memory spends its time: LoCoMo conv-26 (419 turns) searched in-process and over HTTP.

    .venv/bin/python bench/search_profile.py ../shared/bench/locomo-dev.json [--rounds 3] [--later] [--logging]
        [--profile] [--dump FILE]

On bench/locomo.py's data directory (MEMORY_DATA_DIR, default var/bench-locomo): the conversation's memory is
ingested through the real pipeline in this process on first use (bench/locomo.py's `ingest_all`), reused after.
Every question of categories 1-4 is asked with `limit: 10`, as bench/peers.py asks it:

- in-process `search()`: p50 per round, and per step (bench/search_latency.py's `timed_parts`) with the number of
  SQL statements, the time spent waiting on them and the Redis round trips (commands sent, a pipeline once);
- the query's embedding alone (the floor any hybrid search pays; mem0's query is this and ~2 ms);
- with `--later`, in-process `search()` of each question as ten minutes after the last (someone who asks now and
  then): every key this process's Redis would hold ten minutes more at most is dropped first, and the recall thread's
  work of the question before is done;
- with `--logging`, in-process `search()` of each question right after the assistant logged a metric reading (an
  assistant that logs as it asks: a write no search reads);
- `POST /query/search` to a real uvicorn (bench/serving.py) on the same data, one request at a time, and the same
  with `includeFormattedResult: false`: the HTTP round trip minus the in-process search is the request path,
  the render and the JSON. `--compare PATH` adds a second uvicorn serving the code at PATH (e.g. main's, from
  `git archive main | tar -x -C PATH`), and `--compare-env NAME=VALUE` (repeatable) runs it with those settings
  (this checkout's code unless `--compare` names another): each question goes to both, which one first
  alternating, and the median of the paired differences is printed per round, the figure that survives a noisy
  machine. Each server keeps its caches in a Redis database of its own (1 and 2; this process's searches use 0),
  so neither finds the word counts another counted.

`--profile` prints cProfile's top functions of the in-process searches; `--dump FILE` writes each question's
results (type and id, in rank order) as JSON, to check that a change leaves the answers as they were.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-locomo"))
os.environ.setdefault("DB_POOL", "1")  # as in the web process (config.asgi)

LIMIT = 10
COMPARED = " (compared)"


@contextmanager
def redis_round_trips(counter: list[int]) -> Iterator[None]:
    """Counts the commands (a pipeline: one) this process sends to Redis."""
    from unittest import mock

    import redis.connection

    original = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        counter[0] += 1
        return original(self, *args, **kwargs)

    with mock.patch.object(redis.connection.AbstractConnection, "send_packed_command", counted):
        yield


LATER_SECONDS = 600


def ten_minutes_passed() -> None:
    """Redis as LATER_SECONDS from now: the recall thread's work done, every key due to expire by then gone, and the
    others' time to live shorter by LATER_SECONDS (a key kept an hour is gone after six such questions)."""
    from django.core.cache import cache

    from memory.recall.threads import drained

    drained("vocabulary")
    client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    keys = list(client.scan_iter(count=1000))
    pipeline = client.pipeline(transaction=False)
    for key in keys:
        pipeline.ttl(key)
    ttls = pipeline.execute()
    pipeline = client.pipeline(transaction=False)
    for key, ttl in zip(keys, ttls, strict=True):
        if 0 <= ttl <= LATER_SECONDS:
            pipeline.delete(key)
        elif ttl > LATER_SECONDS:
            pipeline.expire(key, ttl - LATER_SECONDS)
    pipeline.execute()


def metric_logged(access: Any) -> Callable[[], None]:
    """Before each question, the assistant logs a reading (a write search never reads, committed)."""
    from django.utils import timezone

    from metrics.services import observation_record

    def logged() -> None:
        observation_record(access, slug="bench_steps", value=4200.0, occurred_at=timezone.now())

    return logged


def in_process(
    access: Any, questions: list[str], rounds: int, before: Callable[[], None] | None = None
) -> tuple[list[float], dict[str, list[float]]]:
    """Each round's p50 of search(), and per step the time of every call of the last round (`before`: done before
    each question, e.g. `ten_minutes_passed`)."""
    from django.db import connection

    from bench.search_latency import EMBEDDING_RUN, timed_parts
    from memory.recall.search import SearchRequest, search

    medians = []
    per_step: dict[str, list[float]] = defaultdict(list)
    for number in range(rounds):
        spent = []
        for question in questions:
            parts: dict[str, float] = {}
            waited: list[float] = []
            commands = [0]

            def sql_timer(execute: Callable[..., Any], *args: Any, waited: list[float] = waited) -> Any:
                began = time.perf_counter()
                try:
                    return execute(*args)
                finally:
                    waited.append((time.perf_counter() - began) * 1000)

            last = number == rounds - 1
            if before is not None:
                before()
            with timed_parts(parts if last else {}), connection.execute_wrapper(sql_timer), redis_round_trips(commands):
                began = time.perf_counter()
                search(access, SearchRequest(query=question, limit=LIMIT))
                total = (time.perf_counter() - began) * 1000
            spent.append(total)
            if last:
                # The query may be embedded on another thread beside the keyword legs: its time is not the caller's.
                own = sum(spent for step, spent in parts.items() if step != EMBEDDING_RUN)
                parts["rest (fusion, boosts, composing; waiting for the embedding)"] = total - own
                parts |= {"total": total, "(waiting on SQL)": sum(waited), "(SQL statements)": len(waited)}
                parts["(Redis round trips)"] = commands[0]
                for step, value in parts.items():
                    per_step[step].append(value)
        medians.append(statistics.median(spent))
    return medians, per_step


def embedding_alone(questions: list[str]) -> float:
    from memory.embeddings import get_embedder

    embedder = get_embedder()
    spent = []
    for question in questions:
        began = time.perf_counter()
        embedder.embed_query(question)
        spent.append((time.perf_counter() - began) * 1000)
    return statistics.median(spent)


def _version_copied(user: Any, url: str, databases: list[int]) -> None:
    """The owner's memory version, as this Redis database holds it (made where it holds none, as a write makes it),
    into the servers' own databases: each server's caches apart, the memory version one, as the service has it
    (what is held at a version, e.g. memory.recall.held_vectors, is held only where there is one)."""
    import redis
    from django.core.cache import cache

    from bench.serving import redis_database
    from memory.services.audit import memory_version, memory_version_key

    version = memory_version(user.pk)
    for number in databases:
        with contextlib.closing(redis.Redis.from_url(redis_database(url, number))) as client:
            client.set(cache.make_key(memory_version_key(user.pk)), version)


def over_http(
    user: Any, questions: list[str], rounds: int, compare: Path | None, compare_env: dict[str, str]
) -> dict[str, list[float]]:
    """Each round's p50 of POST /query/search, with and without formattedResult, interleaved per question; with
    `compare` or `compare_env`, the same on a second uvicorn (the code checked out at `compare`, the settings
    `compare_env`; same data, same token), the two asked in turn, and the median of the paired differences."""
    import httpx
    from django.conf import settings

    from bench.serving import bearer, read_token, redis_database, served

    secret = read_token(user, "search-profile")
    found: dict[str, list[float]] = defaultdict(list)
    with contextlib.ExitStack() as stack:

        def client(root: Path, environment: dict[str, str]) -> httpx.Client:
            url = stack.enter_context(served(root, environment=environment))
            return stack.enter_context(httpx.Client(base_url=url, headers=bearer(secret), timeout=60))

        _version_copied(user, settings.REDIS_URL, [1, 2])
        clients = {"": client(ROOT, {"REDIS_URL": redis_database(settings.REDIS_URL, 1)})}
        if compare is not None or compare_env:
            environment = {"REDIS_URL": redis_database(settings.REDIS_URL, 2)} | compare_env
            clients[COMPARED] = client(compare or ROOT, environment)
        for served_client in clients.values():
            for question in questions[:30]:
                served_client.post("/query/search", json={"query": question, "limit": LIMIT}).raise_for_status()
        for _ in range(rounds):
            spent: dict[str, list[float]] = defaultdict(list)
            for number, question in enumerate(questions):
                for name, extra in (("REST", {}), ("REST, no formattedResult", {"includeFormattedResult": False})):
                    turns = list(clients.items())
                    for label, served_client in turns if number % 2 == 0 else reversed(turns):
                        began = time.perf_counter()
                        body = {"query": question, "limit": LIMIT} | extra
                        served_client.post("/query/search", json=body).raise_for_status()
                        spent[name + label].append((time.perf_counter() - began) * 1000)
            for name, values in spent.items():
                found[name].append(statistics.median(values))
            if len(clients) == 2:
                paired = zip(spent["REST" + COMPARED], spent["REST"], strict=True)
                found["REST, compared minus this (paired)"].append(statistics.median(b - a for b, a in paired))
    return found


def dumped(access: Any, questions: list[str]) -> dict[str, list[list[str]]]:
    from memory.recall.search import SearchRequest, search

    return {
        question: [
            [result.type, result.candidate.id] for result in search(access, SearchRequest(query=question, limit=LIMIT))
        ]
        for question in questions
    }


def profiled(access: Any, questions: list[str]) -> str:
    from memory.recall.search import SearchRequest, search

    profile = cProfile.Profile()
    profile.enable()
    for question in questions:
        search(access, SearchRequest(query=question, limit=LIMIT))
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(40)
    return out.getvalue()


def print_steps(per_step: dict[str, list[float]]) -> None:
    print("\n| step (last round) | p50 | p95 |\n|---|---:|---:|")
    for step, values in per_step.items():
        cuts = statistics.quantiles(values, n=20, method="inclusive")
        print(f"| {step} | {statistics.median(values):.2f} | {cuts[18]:.2f} |")


def _setting(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--sample", default="conv-26")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--dump", type=Path, help="write each question's results (type, id) here as JSON")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--later", action="store_true", help="also each question as ten minutes after the last")
    parser.add_argument("--logging", action="store_true", help="also each question after a metric logged")
    parser.add_argument("--compare", type=Path, help="a checkout whose code a second uvicorn serves, interleaved")
    parser.add_argument(
        "--compare-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        type=_setting,
        help="a setting of the second uvicorn (repeatable; this checkout's code without --compare)",
    )
    options = parser.parse_args()
    from bench.locomo import asked_qa, ingest_all, sample_named

    sample = sample_named(options.data, options.sample)  # before anything is started

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from config.embedded import ensure_started
    from memory.access import access_for_user

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    user = ingest_all([sample], reuse=True)[options.sample]
    access = access_for_user(user=user)
    questions = [qa["question"] for qa, _ in asked_qa(sample)]
    load = [os.getloadavg()[0]]
    print(f"{options.sample}: {len(questions)} questions; load average {load[0]:.2f}", flush=True)
    if options.dump:
        options.dump.write_text(json.dumps(dumped(access, questions), indent=1))
        print(f"results written to {options.dump}")
    medians, per_step = in_process(access, questions, options.rounds)
    load.append(os.getloadavg()[0])
    embed = embedding_alone(questions)
    print(f"\nin-process search(), p50 per round (ms): {', '.join(f'{value:.1f}' for value in medians)}")
    print(f"the query's embedding alone, p50: {embed:.1f} ms")
    print_steps(per_step)
    if options.later:
        medians, per_step = in_process(access, questions, options.rounds, before=ten_minutes_passed)
        print(f"\nin-process search() ten minutes after the last, p50 per round (ms): "
              f"{', '.join(f'{value:.1f}' for value in medians)}")  # fmt: skip
        print_steps(per_step)
    if options.logging:
        medians, per_step = in_process(access, questions, options.rounds, before=metric_logged(access))
        print(f"\nin-process search() each after a metric logged, p50 per round (ms): "
              f"{', '.join(f'{value:.1f}' for value in medians)}")  # fmt: skip
        print_steps(per_step)
    if not options.no_http:
        http = over_http(user, questions, options.rounds, options.compare, dict(options.compare_env))
        load.append(os.getloadavg()[0])
        for name, values in http.items():
            print(f"{name} p50 per round (ms): {', '.join(f'{value:.2f}' for value in values)}; "
                  f"median {statistics.median(values):.2f}")  # fmt: skip
        print(f"HTTP minus in-process, p50: {statistics.median(http['REST']) - statistics.median(medians):+.1f} ms")
    if options.profile:
        print(profiled(access, questions))
    print(f"load average: {' -> '.join(f'{value:.2f}' for value in load)}")


if __name__ == "__main__":
    main()

"""Ingestion throughput, end to end: conversations posted through the real ingestion service, processed by one
real Celery worker (convert, chunk, embed with the default MiniLM, extract, ...), timed until every receipt
is completed.

    .venv/bin/python bench/ingest_throughput.py [--conversations 40] [--messages 25] [--concurrency 1] [--search 100]
        [--search-while 60] [--rounds 3]

Uses its own embedded data directory (var/bench, or MEMORY_DATA_DIR) and removes nothing else. Prints messages
per second for the accept path (202 receipts) and for the whole pipeline, and the CPU the pipeline's processes
(worker, PostgreSQL, Redis) used per message, which other load on the machine does not change. `--search N`:
then N searches of the ingested memory right away ("fresh data": what the planner knows is whatever the pipeline
and autovacuum left), twice (the second pass with warm caches), and the same N after an explicit ANALYZE of the
memory tables, with p50/p95 of each and the tables' statistics state before the first. `--search-while N`: up to N
searches in this process, 0.2 s apart, while the worker is still processing (what a person searching during a
large import sees; the worker runs at WORKER_NICENESS), with their p50/p95. Use a new MEMORY_DATA_DIR for a fresh
store. `--rounds N`: the measured part N times with one worker (new conversations each time, in the same store),
each round printed and the headline figures their median.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from bench.report import headline  # noqa: E402

SUBJECTS = ["the spec", "the garden", "my sister's wedding", "the quarterly report", "running club", "the API"]
VERBS = ["finish", "review", "plan", "discuss", "move", "send"]
TIMES = ["tomorrow", "on Friday", "next week", "before the meeting", "tonight", "in May"]


def sentence(rng: random.Random) -> str:
    return (
        f"I need to {rng.choice(VERBS)} {rng.choice(SUBJECTS)} {rng.choice(TIMES)}, "
        f"and I'd like to {rng.choice(VERBS)} {rng.choice(SUBJECTS)} too."
    )


def ingest_timed(
    access: Any,
    rng: random.Random,
    conversations: int,
    messages: int,
    concurrency: int,
    environment: dict[str, str],
    search_while: int = 0,
    rounds: int = 1,
) -> list[dict[str, Any]]:
    """`rounds` times, `conversations` generated conversations of `messages` messages through the ingestion service
    and one real Celery worker (started and warmed once, outside the measurement); per round: the accept time of
    each conversation, the seconds until all were accepted and until all were processed, how many receipts failed,
    the CPU the pipeline's processes used, and the searches made while it worked."""
    from config.celery import app
    from memory.embeddings.minilm import int8_model_prepared
    from memory.models import Operation, OperationStatus
    from memory.services.ingestion import ConversationIn, MessageIn, ingest_conversation

    int8_model_prepared()  # as `make run` does: once, before the worker starts
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING",
         "--concurrency", str(concurrency), "--hostname", "bench@%h", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    stamp = int(time.time())  # conversation ids new in a store that is measured again
    try:
        while not app.control.ping(timeout=0.5):
            time.sleep(0.2)
        warm = ingest_conversation(  # the model loads outside the measurement
            access=access,
            conversation=ConversationIn(
                id=f"warm-{stamp}", messages=[MessageIn(id="m", content="Hello.", role="user")]
            ),
        )
        while Operation.objects.get(pk=warm.operation.pk).status not in (OperationStatus.COMPLETED, "failed"):
            time.sleep(0.1)
        if search_while:
            timed_search(access, question(rng))  # this process's embedder loads outside the measurement too
        return [
            _round(access, rng, f"{stamp}-{number}", conversations, messages, worker.pid, search_while)
            for number in range(rounds)
        ]
    finally:
        worker.terminate()
        worker.wait(timeout=60)


def _round(
    access: Any, rng: random.Random, stamp: str, conversations: int, messages: int, worker_pid: int, search_while: int
) -> dict[str, Any]:
    from memory.models import Operation
    from memory.services.ingestion import ConversationIn, MessageIn, ingest_conversation

    accept_ms: list[float] = []
    operation_ids = []
    cpu_before = pipeline_cpu(worker_pid)
    started = time.perf_counter()
    for index in range(conversations):
        batch = [
            MessageIn(id=f"m{n}", role="user" if n % 2 == 0 else "assistant", content=sentence(rng))
            for n in range(messages)
        ]
        before = time.perf_counter()
        receipt = ingest_conversation(
            access=access, conversation=ConversationIn(id=f"chat-{stamp}-{index}", messages=batch)
        )
        accept_ms.append((time.perf_counter() - before) * 1000)
        operation_ids.append(receipt.operation.pk)
    accepted = time.perf_counter() - started
    busy_search_ms: list[float] = []  # a person searching while the pipeline works: one question every 0.2 s
    while Operation.objects.filter(pk__in=operation_ids, status__in=["queued", "processing"]).exists():
        if len(busy_search_ms) < search_while:
            busy_search_ms.append(timed_search(access, question(rng)))
            time.sleep(0.2)
        else:
            time.sleep(0.05)
    finished = time.perf_counter() - started
    cpu = {role: used - cpu_before[role] for role, used in pipeline_cpu(worker_pid).items()}
    failed = Operation.objects.filter(pk__in=operation_ids, status="failed").count()
    return {
        "accept_ms": accept_ms, "accepted": accepted, "finished": finished, "failed": failed, "cpu": cpu,
        "busy_search_ms": busy_search_ms,
    }  # fmt: skip


def question(rng: random.Random) -> str:
    return f"when do I {rng.choice(VERBS)} {rng.choice(SUBJECTS)}?"


def timed_search(access: Any, query: str) -> float:
    """Milliseconds of one in-process search."""
    from memory.recall.search import SearchRequest, search

    before = time.perf_counter()
    search(access, SearchRequest(query=query))
    return (time.perf_counter() - before) * 1000


def pipeline_cpu(worker_pid: int) -> dict[str, float]:
    """CPU seconds used so far by the worker (with its pool processes), the embedded PostgreSQL (every process,
    less this benchmark's own connection, which posts and polls) and Redis: the work of the pipeline, which the
    wall clock cannot show on a machine shared with other load. A process counts its reaped children too
    (backends of closed connections, recycled pool processes). Empty for servers not embedded."""
    from django.conf import settings
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        own_backend = cursor.fetchone()[0]
    postmaster = _pidfile(settings.DATA_DIR / "postgres" / "postmaster.pid")
    redis = _pidfile(settings.DATA_DIR / "redis" / "redis.pid")
    return {
        "worker": _cpu_seconds(_tree(worker_pid)),
        "postgres": _cpu_seconds([pid for pid in _tree(postmaster) if pid != own_backend]) if postmaster else 0.0,
        "redis": _cpu_seconds([redis]) if redis else 0.0,
    }


def _cpu_seconds(pids: list[int]) -> float:
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone: its parent counts it
        ticks += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return pids


def _pidfile(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=40)
    parser.add_argument("--messages", type=int, default=25)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--search", type=int, default=0, help="searches right after the ingestion, then after ANALYZE")
    parser.add_argument("--search-while", type=int, default=0, help="searches while the worker processes, 0.2 s apart")
    parser.add_argument("--rounds", type=int, default=1, help="measured rounds (the headline is their median)")
    options = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from config.embedded import ensure_started
    from memory.access import Actor, access_for_token
    from memory.models import User
    from memory.services.tokens import token_issue

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    user, _ = User.objects.get_or_create(username=f"bench-{int(time.time())}")
    token = token_issue(actor=Actor.system(), owner=user, label="bench", scopes=["read", "write"]).token
    access = access_for_token(token=token, user_id=None, partition_key=None, workspace=False)

    environment = {**os.environ}
    environment.setdefault("EMBEDDING_THREADS", str(max(1, (os.cpu_count() or 1) // options.concurrency)))
    rng = random.Random(7)  # noqa: S311 (reproducible test data, not secrets)
    rounds = ingest_timed(
        access, rng, options.conversations, options.messages, options.concurrency, environment, options.search_while,
        options.rounds,
    )  # fmt: skip
    fresh = fresh_search(access, options.search, rng) if options.search else None

    total = options.conversations * options.messages
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    from memory.embeddings.minilm_rewrite import products_wanted

    products = products_wanted()
    int8 = f"{products} matrix products" if products else "the pinned model as shipped"
    print(f"workload: {options.conversations} conversations x {options.messages} messages = {total} messages; "
          f"worker concurrency {options.concurrency}, {environment['EMBEDDING_THREADS']} embedding thread(s) each; "
          f"embedder {settings.EMBEDDER} ({int8}); {len(rounds)} round(s) of new conversations, one store")  # fmt: skip
    cores = os.cpu_count() or 1
    for number, timed in enumerate(rounds, start=1):
        print(f"round {number}:")
        print(f"  accept (202 receipts): median {statistics.median(timed['accept_ms']):.1f} ms per conversation, "
              f"{total / timed['accepted']:.0f} messages/s")  # fmt: skip
        print(f"  end to end (all receipts completed): {timed['finished']:.1f} s, {total / timed['finished']:.0f} "
              f"messages/s, failed {timed['failed']}")  # fmt: skip
        per_message = {role: seconds / total * 1000 for role, seconds in timed["cpu"].items()}
        spent = sum(per_message.values())
        print(f"  CPU per message (load-independent): worker {per_message['worker']:.1f} ms + PostgreSQL "
              f"{per_message['postgres']:.1f} ms + Redis {per_message['redis']:.1f} ms = {spent:.1f} ms; "
              f"{cores} cores to themselves: {cores * 1000 / spent:.0f} messages/s; "
              f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        if busy := timed["busy_search_ms"]:
            print(f"  search while the worker processed ({len(busy)} queries, 0.2 s apart, WORKER_NICENESS "
                  f"{settings.WORKER_NICENESS}): {summary(busy)}")  # fmt: skip
    accept = statistics.median(total / timed["accepted"] for timed in rounds)
    end_to_end = statistics.median(total / timed["finished"] for timed in rounds)
    cpu_ms = statistics.median(sum(timed["cpu"].values()) / total * 1000 for timed in rounds)
    if len(rounds) > 1:
        print(f"median of {len(rounds)} rounds: accept {accept:.0f} messages/s, end to end {end_to_end:.0f} "
              f"messages/s, CPU {cpu_ms:.1f} ms a message")  # fmt: skip
    headline("accept path", accept, "messages/s", ">= 500")
    headline(f"end to end, one worker of concurrency {options.concurrency}", end_to_end, "messages/s", ">= 150")
    headline("pipeline CPU a message (worker, PostgreSQL, Redis)", cpu_ms, "ms", "")
    headline("receipts failed", sum(timed["failed"] for timed in rounds), "", "0")
    if fresh:
        print(fresh)


def fresh_search(access: Any, count: int, rng: random.Random) -> str:
    """Search the memory just ingested (its statistics as the pipeline left them), then ANALYZE and search again."""
    from django.db import connection

    # Named here rather than imported, so the script also runs against a checkout from before issue 18.
    TABLES = ["memory_alias", "memory_chunk", "memory_claim", "memory_evidence", "memory_node", "memory_source"]

    questions = [question(rng) for _ in range(count)]

    def timed() -> list[float]:
        for query in questions[:5]:  # warm the word statistics caches, as a running service has them
            timed_search(access, query)
        return [timed_search(access, query) for query in questions]

    def state() -> str:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT relname, n_live_tup, n_mod_since_analyze, last_analyze IS NOT NULL OR last_autoanalyze IS "
                "NOT NULL FROM pg_stat_user_tables WHERE relname = ANY(%s) ORDER BY relname",
                [list(TABLES)],
            )
            rows = cursor.fetchall()
        return ", ".join(
            f"{name} {live} rows, {changed} changed since analysed={done}" for name, live, changed, done in rows
        )

    tables = state()
    first = timed()
    again = timed()  # the same queries once more: caches warm, statistics still as the pipeline left them
    with connection.cursor() as cursor:
        started = time.perf_counter()
        cursor.execute("ANALYZE " + ", ".join(TABLES))
        analyse_s = time.perf_counter() - started
    second = timed()

    return (
        f"tables right after the ingestion: {tables}\n"
        f"search right after the ingestion ({count} queries): {summary(first)}; the same again: {summary(again)}\n"
        f"search after ANALYZE ({analyse_s:.2f} s): {summary(second)}"
    )


def summary(values: list[float]) -> str:
    return f"p50 {statistics.median(values):.1f} ms, p95 {statistics.quantiles(values, n=20)[18]:.1f} ms"


if __name__ == "__main__":
    main()

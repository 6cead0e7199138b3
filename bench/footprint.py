"""Footprint and start time of `make run`: memory of every process, idle and after a standard workload, and how
long a second start takes to answer `GET /healthz` with 200.

    .venv/bin/python bench/footprint.py [--conversations 40] [--messages 25] [--file-chars 130000]
                                        [--file PATH] [--searches 200] [--starts 3] [--data-dir var/bench-footprint]

Starts `manage.py runall` (what `make run` runs) on a fresh data directory with a free loopback port and waits for
/healthz, a worker and its pool processes' embedding model (each loads it as it starts: "idle" is the worker
ready to work, not a process that would still grow by its model on the first job). Memory is counted per role over
the whole process tree: supervisor (runall), web (uvicorn), worker (the Celery parent and, apart, its pool
processes and anything they start), beat, postgres (the postmaster and its backends) and redis. Two figures per
process: PSS (proportional set size, from /proc/<pid>/smaps_rollup: a page shared by n processes counts 1/n in
each, so the sum is what the machine really spends; this is the headline) and RSS (every resident page counted in
every process that maps it, so the sum counts PostgreSQL's shared buffers and the pages a forked pool shares with
its parent several times).

Workload: `--conversations` conversations of `--messages` messages through POST /ingest/conversation, then one
large file through POST /ingest/file (a generated PDF of `--file-chars` characters of text, or `--file`), then
`--searches` POST /query/search. The worker's memory is sampled 4 times a second throughout for its peak; its
size once the file's receipt completed is printed too. Then the service is stopped (SIGINT, as Ctrl-C) and
started `--starts` times more on the same data directory: the seconds from the start to /healthz 200 (median).
The service runs with Python's bytecode cache on (as from a user's shell; `--no-bytecode-cache` keeps a
PYTHONDONTWRITEBYTECODE the shell sets). Prints JSON. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report import headline  # noqa: E402
from bench.serving import until as waited  # noqa: E402

WAIT_S = 600  # the bound of every wait
MB = 1024 * 1024
ROLES = ("supervisor", "web", "worker", "worker pool", "beat", "postgres", "redis", "other")


# -- processes and their memory ----------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        todo += _children(current)
    return pids


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _memory(pid: int) -> tuple[int, int]:
    """(PSS, RSS) in bytes; (0, 0) for a process that is gone."""
    pss = rss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
            elif line.startswith("Rss:"):
                rss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return pss, rss


def _pidfile(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def roles(supervisor: int, data_dir: Path) -> dict[str, list[int]]:
    """Which processes play which role now (the servers run in their own session, outside the supervisor's tree)."""
    found: dict[str, list[int]] = {role: [] for role in ROLES}
    found["supervisor"].append(supervisor)
    for child in _children(supervisor):
        command = _cmdline(child)
        if "uvicorn" in command:
            found["web"] += _tree(child)
        elif " worker" in command:
            found["worker"].append(child)
            found["worker pool"] += _tree(child)[1:]
        elif " beat" in command:
            found["beat"] += _tree(child)
        else:
            found["other"] += _tree(child)
    postmaster = _pidfile(data_dir / "postgres" / "postmaster.pid")
    if postmaster:
        found["postgres"] += _tree(postmaster)
    redis = _pidfile(data_dir / "redis" / "redis.pid")
    if redis:
        found["redis"].append(redis)
    return found


def measure(supervisor: int, data_dir: Path) -> dict[str, dict[str, float]]:
    """Per role: processes, PSS and RSS in MB; and the total."""
    table: dict[str, dict[str, float]] = {}
    for role, pids in roles(supervisor, data_dir).items():
        sizes = [_memory(pid) for pid in pids]
        table[role] = {
            "processes": len(pids),
            "pssMB": round(sum(pss for pss, _ in sizes) / MB, 1),
            "rssMB": round(sum(rss for _, rss in sizes) / MB, 1),
        }
    table["total"] = {key: round(sum(row[key] for row in table.values()), 1) for key in ("processes", "pssMB", "rssMB")}
    return table


class WorkerSampler(threading.Thread):
    """The worker's PSS (parent + pool) and the largest single pool process, 4 times a second."""

    def __init__(self, supervisor: int, data_dir: Path) -> None:
        super().__init__(daemon=True)
        self.supervisor, self.data_dir = supervisor, data_dir
        self.peak_mb = self.peak_process_mb = self.peak_total_mb = 0.0
        self.done = threading.Event()

    def reset(self) -> None:
        self.peak_mb = self.peak_process_mb = self.peak_total_mb = 0.0

    def run(self) -> None:
        while not self.done.wait(0.25):
            found = roles(self.supervisor, self.data_dir)
            worker = [_memory(pid)[0] / MB for pid in found["worker"] + found["worker pool"]]
            everything = [_memory(pid)[0] / MB for pids in found.values() for pid in pids]
            self.peak_mb = max(self.peak_mb, sum(worker))
            self.peak_process_mb = max(self.peak_process_mb, max(worker, default=0.0))
            self.peak_total_mb = max(self.peak_total_mb, sum(everything))


# -- the service ---------------------------------------------------------------------------------------------------
class Service:
    def __init__(self, data_dir: Path, *, bytecode: bool = True) -> None:
        """`bytecode`: run as from a user's shell, where Python caches the project's compiled modules after the
        first start. Shells that set PYTHONDONTWRITEBYTECODE (sandboxes, some CI) make every start compile the
        project again; the cache goes to a directory beside the data directory, never into the source tree."""
        self.data_dir = data_dir
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        dropped = {"DATABASE_URL", "REDIS_URL", *(["PYTHONDONTWRITEBYTECODE"] if bytecode else [])}
        self.env = {key: value for key, value in os.environ.items() if key not in dropped}
        self.env.update(
            DJANGO_SETTINGS_MODULE="config.settings", MEMORY_DATA_DIR=str(data_dir), HOST="127.0.0.1",
            PORT=str(self.port), PYTHONUNBUFFERED="1",
        )  # fmt: skip
        if bytecode:
            self.env["PYTHONPYCACHEPREFIX"] = str(data_dir.parent / f"{data_dir.name}.pycache")
        self.log = data_dir.parent / f"{data_dir.name}.runall.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.secret = ""

    def start(self) -> float:
        """Seconds from the start to /healthz 200."""
        started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runall"], cwd=ROOT, env=self.env,
            stdout=self.log.open("a"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        until(lambda: self.health()[0] == 200, "/healthz 200", every=0.05)
        return time.monotonic() - started

    def stop(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=120)
        # The last process out stops the servers; the next start must find them stopped, as after Ctrl-C.
        until(lambda: not _pidfile(self.data_dir / "redis" / "redis.pid"), "Redis to stop")
        until(lambda: not (self.data_dir / "postgres" / "postmaster.pid").exists(), "PostgreSQL to stop")

    def health(self) -> tuple[int, dict[str, Any]]:
        try:
            response = httpx.get(f"{self.url}/healthz", timeout=10)
            return response.status_code, response.json()
        except (httpx.HTTPError, ValueError):
            return 0, {}

    def read_secret(self) -> None:
        line = next(line for line in self.log.read_text().splitlines() if "Access token" in line)
        self.secret = line.split(":", 1)[1].strip()

    def post(self, path: str, **kwargs: Any) -> dict[str, Any]:
        response = httpx.post(
            f"{self.url}{path}", headers={"Authorization": f"Bearer {self.secret}"}, timeout=120, **kwargs
        )
        if response.status_code >= 400:
            raise SystemExit(f"{path} answered {response.status_code}: {response.text[:300]}")
        return dict(response.json())

    def wait_completed(self, operation_ids: list[str]) -> None:
        def done() -> bool:
            statuses = [self.post("/source/processing/get", json={"operationId": i})["status"] for i in operation_ids]
            if "failed" in statuses:
                raise SystemExit("a receipt failed; see the runall log")
            return all(status == "completed" for status in statuses)

        until(done, "every receipt to complete", every=1)


def pool_ready(supervisor: int, data_dir: Path) -> Callable[[], bool]:
    """A check that every pool process of the worker has loaded its embedding model (each does as it starts, in a
    thread: config.celery) and its memory has stopped moving: the worker's idle size is the size it works at."""
    last: dict[int, int] = {}

    def ready() -> bool:
        pool = roles(supervisor, data_dir)["worker pool"]
        try:
            loaded = bool(pool) and all("onnxruntime" in Path(f"/proc/{pid}/maps").read_text() for pid in pool)
        except OSError:
            return False
        sizes = {pid: _memory(pid)[0] // MB for pid in pool}
        steady = loaded and sizes == last
        last.clear()
        last.update(sizes)
        return steady

    return ready


def until(predicate: Callable[[], object], what: str, timeout: float = WAIT_S, every: float = 0.25) -> float:
    return waited(predicate, what, timeout, every)


def settle(seconds: float = 5.0) -> None:
    """Idle long enough for the worker to finish bookkeeping and a recycled pool process to be replaced."""
    time.sleep(seconds)


# -- the workload --------------------------------------------------------------------------------------------------
WORDS = [
    "project", "budget", "meeting", "review", "planning", "quarterly", "spec", "design", "travel", "garden", "report",
    "customer", "invoice", "deadline", "team", "office", "schedule", "running", "club", "wedding", "sister",
    "dentist", "apartment", "Amsterdam", "Berlin", "Marcel", "Ilse",
]  # fmt: skip
SAYINGS = [
    "I prefer {a} over {b} these days.",
    "I'll send the {a} to Marcel by Friday.",
    "Ilse will review the {a} next week.",
    "My {a} meeting moved to Tuesday at 10.",
    "We decided to drop the {a} and focus on the {b}.",
    "I work on the {a} project with Ilse.",
    "Remind me to book the {a} before the {b}.",
    "I ran 5 km this morning before the {a} call.",
]


def conversation(rng: random.Random, number: int, messages: int) -> dict[str, Any]:
    turns = []
    for n in range(messages):
        saying = rng.choice(SAYINGS).format(a=rng.choice(WORDS), b=rng.choice(WORDS))
        turns.append(
            {
                "id": f"m{n}",
                "role": "user" if n % 2 == 0 else "assistant",
                "content": saying if n % 2 == 0 else f"Noted: {saying.lower()}",
                "timestamp": f"2026-11-{1 + number % 28:02d}T{8 + n % 12:02d}:{n % 60:02d}:00Z",
            }
        )
    return {"conversation": {"id": f"footprint-{number}", "title": f"Chat {number}", "messages": turns}}


def pdf_document(characters: int, seed: int = 7) -> bytes:
    """A plain text PDF (Helvetica, 55 lines a page) holding about `characters` characters, written by hand so the
    benchmark needs no PDF library."""
    rng = random.Random(seed)  # noqa: S311 (test data, not secrets)
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < characters:
        lines.append(" ".join(rng.choice(WORDS) for _ in range(13)) + ".")
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    kids: list[int] = []
    for first in range(0, len(lines), 55):
        page, content = 4 + 2 * len(kids), 5 + 2 * len(kids)
        kids.append(page)
        text = "\n".join(f"({line}) Tj T*" for line in lines[first : first + 55])
        stream = f"BT /F1 10 Tf 12 TL 36 756 Td\n{text}\nET".encode("latin-1")
        objects[content] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
        objects[page] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {content} 0 R >>"
        ).encode()
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    xref, size = len(out), max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(b"%010d 00000 n \n" % offsets[number] for number in range(1, size))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def workload(service: Service, sampler: WorkerSampler, options: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(18)  # noqa: S311 (test data, not secrets)
    started = time.monotonic()
    receipts = [
        service.post("/ingest/conversation", json=conversation(rng, n, options.messages))["operationId"]
        for n in range(options.conversations)
    ]
    service.wait_completed(receipts)
    conversations_s = time.monotonic() - started
    settle()
    after_conversations = measure(service.process.pid, service.data_dir)  # type: ignore[union-attr]

    if options.file:
        name, content = Path(options.file).name, Path(options.file).read_bytes()
    else:
        name, content = "footprint.pdf", pdf_document(options.file_chars)
    sampler.reset()
    started = time.monotonic()
    receipt = service.post(
        "/ingest/file",
        files={"file": (name, content, "application/octet-stream")},
        data={"document": json.dumps({"id": f"footprint-file-{name}", "title": name})},
    )
    service.wait_completed([receipt["operationId"]])
    file_s = time.monotonic() - started
    peak = {"workerPssMB": round(sampler.peak_mb, 1), "largestWorkerProcessPssMB": round(sampler.peak_process_mb, 1)}
    settle()
    after_file = measure(service.process.pid, service.data_dir)  # type: ignore[union-attr]
    source = service.post("/source/get", json={"sourceId": receipt["sourceId"], "includeContent": True})

    started = time.monotonic()
    for _ in range(options.searches):
        service.post("/query/search", json={"query": " ".join(rng.sample(WORDS, 3))})
    searches_s = time.monotonic() - started
    return {
        "conversationsSeconds": round(conversations_s, 1),
        "file": {
            "name": name,
            "bytes": len(content),
            "convertedChars": len((source.get("content") or {}).get("text") or ""),
        },
        "fileSeconds": round(file_s, 1),
        "searchesSeconds": round(searches_s, 1),
        "afterConversations": after_conversations,
        "workerPeakDuringFile": peak,
        "afterFile": after_file,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=40)
    parser.add_argument("--messages", type=int, default=25)
    parser.add_argument("--file-chars", type=int, default=130_000)
    parser.add_argument("--file", help="ingest this file instead of the generated PDF")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-footprint")
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="keep PYTHONDONTWRITEBYTECODE if the shell sets it"
    )
    options = parser.parse_args()
    data_dir = options.data_dir.resolve()
    if (data_dir / "postgres" / "postmaster.pid").exists() or (data_dir / "redis" / "redis.pid").exists():
        raise SystemExit(f"Servers still run on {data_dir}: stop them first (deleting their directory strands them).")
    shutil.rmtree(data_dir, ignore_errors=True)  # a fresh data directory: the first start is a first start
    shutil.rmtree(data_dir.parent / f"{data_dir.name}.pycache", ignore_errors=True)
    data_dir.mkdir(parents=True)
    service = Service(data_dir, bytecode=not options.no_bytecode_cache)
    service.log.write_text("")
    result: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "loadAverageAtStart": os.getloadavg()[0],
        "memory": "PSS (smaps_rollup; the headline) and RSS, MB",
        "bytecodeCache": "off (PYTHONDONTWRITEBYTECODE)" if options.no_bytecode_cache else "on",
    }
    result["firstStartSeconds"] = round(service.start(), 2)
    until(lambda: service.health()[1].get("worker") == "ok", "a worker")
    service.read_secret()
    if os.environ.get("EMBEDDER", "minilm") == "minilm":
        ready = pool_ready(service.process.pid, data_dir)  # type: ignore[union-attr]
        until(ready, "the pool processes to load the embedding model", every=1)
    settle(10)
    assert service.process is not None
    result["idle"] = measure(service.process.pid, data_dir)
    sampler = WorkerSampler(service.process.pid, data_dir)
    sampler.start()
    result["workload"] = workload(service, sampler, options)
    settle()
    result["after"] = measure(service.process.pid, data_dir)
    sampler.done.set()
    result["peakWorkerPssMB"] = round(sampler.peak_mb, 1)
    result["peakTotalPssMB"] = round(sampler.peak_total_mb, 1)
    service.stop()

    starts, workers = [], []
    for _ in range(options.starts):
        starts.append(round(service.start(), 2))
        workers.append(round(starts[-1] + until(lambda: service.health()[1].get("worker") == "ok", "a worker"), 2))
        service.stop()
    result["secondStartSeconds"] = {"median": statistics.median(starts), "each": starts}
    result["secondStartToWorkerSeconds"] = {"median": statistics.median(workers), "each": workers}
    result["loadAverageAtEnd"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))
    for moment in ("idle", "after"):
        headline(f"make run, every process, PSS ({moment})", result[moment]["total"]["pssMB"], "MB", "<= 1500")

    def worker(table: dict[str, Any]) -> float:
        return float(table["worker"]["pssMB"] + table["worker pool"]["pssMB"])

    grown = worker(result["workload"]["afterFile"]) - worker(result["idle"])
    headline("worker after the large file minus idle (ready: model loaded)", grown, "MB", "<= 200")
    from_file = worker(result["workload"]["afterFile"]) - worker(result["workload"]["afterConversations"])
    headline("worker after the large file minus before it", from_file, "MB", "")
    headline("second start to /healthz 200, median", result["secondStartSeconds"]["median"], "s", "<= 5")


if __name__ == "__main__":
    main()

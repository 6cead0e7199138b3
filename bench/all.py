"""`make bench`: every benchmark a newcomer needs, one after another, then one table of their headline figures.

    .venv/bin/python bench/all.py [--locomo ../shared/bench/locomo-dev.json] [--only NAME ...] [--skip NAME ...]

Each script runs in a subprocess with a data directory of its own under var/bench-all/ (search latency keeps
its 100k store in var/bench-search, built once and reused after), its output shown as it comes and kept in
var/bench-all/<name>.log. The LoCoMo figures and the side-by-side with mem0 need the dev conversations, which are
not in this repository: pass their path with --locomo (without it those two are skipped and say so).
The 1,000,000-claim run is separate: `make bench-1m`.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report import headlines  # noqa: E402


@dataclass(frozen=True)
class Step:
    name: str
    script: str
    arguments: tuple[str, ...] = ()
    data_dir: str = ""  # under var/; default var/bench-all/<name>
    locomo: bool = False  # needs --locomo (the path is the script's first argument)


STEPS = [
    Step("embedding", "embedding_speed.py"),
    Step("request overhead", "request_overhead.py", ("--requests", "200")),  # 3 rounds of 200 a path (~60 s)
    Step(  # the goal's medians of 3 rounds (~15 s each here)
        "ingestion",
        "ingest_throughput.py",
        ("--conversations", "80", "--messages", "25", "--concurrency", "2", "--rounds", "3"),
    ),
    Step("long conversation", "long_conversation.py"),  # one new turn at 10, 1,000 and 3,000 turns (~1 min)
    # The headline figures only (hybrid in-process, HTTP), and the 100k store embeds the 10,000 statements the 10k
    # store embedded and generates the other 90,000 vectors (bench/store_vectors.py): embedding them took 220 s of
    # the 18.7 min (docs/benchmarks.md, "make bench in 13 minutes", compares search p95 both ways).
    Step(
        "search latency",
        "search_latency.py",
        ("--sizes", "10000", "100000", "--rounds", "3", "--real", "10000", "--variants", "hybrid"),
        "bench-search",
    ),
    # Every page a person reads, on the 100k store just measured (~40 s).
    Step("ui pages", "ui_pages.py", ("--requests", "6"), "bench-search/claims-100000"),
    Step("footprint", "footprint.py"),
    Step("locomo", "locomo.py", ("--variant", "hybrid", "--protocol", "results"), locomo=True),  # the headline's
    Step("peers", "peers.py", (), locomo=True),
    Step("search concurrency", "search_concurrency.py", ("--seconds", "6"), locomo=True),  # 1, 2, 4, 8 clients (~45 s)
]


def slug(name: str) -> str:
    return name.replace(" ", "-")


def run(step: Step, options: argparse.Namespace) -> tuple[int, float, list[dict[str, object]]]:
    data_dir = ROOT / "var" / (step.data_dir or f"bench-all/{slug(step.name)}")
    arguments = list(step.arguments)
    if step.script == "search_latency.py" and (data_dir / "claims-100000").exists():
        arguments.append("--reuse")  # the 100k store takes minutes to build; measure the one already built
    if step.locomo:
        arguments.insert(0, options.locomo)
    log = ROOT / "var" / "bench-all" / f"{slug(step.name)}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    command = [sys.executable, str(ROOT / "bench" / step.script), *arguments]
    print(f"\n=== {step.name}: {' '.join(command[1:])}", flush=True)
    with subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, "MEMORY_DATA_DIR": str(data_dir)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    ) as process, log.open("w") as kept:  # fmt: skip
        output = []
        for line in process.stdout or ():
            print(line, end="", flush=True)
            kept.write(line)
            output.append(line)
    return process.returncode, time.monotonic() - started, headlines("".join(output))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", help="path of the LoCoMo dev conversations (JSON)")
    parser.add_argument("--only", nargs="+", default=[], help="run only these steps (names as in the table)")
    parser.add_argument("--skip", nargs="+", default=[], help="skip these steps")
    options = parser.parse_args()
    rows, failed = [], []
    started = time.monotonic()
    for step in STEPS:
        if (options.only and step.name not in options.only) or step.name in options.skip:
            continue
        if step.locomo and not options.locomo:
            rows.append((step.name, "skipped: needs --locomo <dev conversations>", "", "", ""))
            continue
        status, seconds, found = run(step, options)
        if status != 0:
            failed.append(step.name)
        rows.append((step.name, f"{'exit ' + str(status) if status else 'ran'} in {seconds:.0f} s", "", "", ""))
        rows.extend((step.name, str(h["metric"]), f"{h['value']:g}", str(h["unit"]), str(h["goal"])) for h in found)
    load = os.getloadavg()
    print(f"\n## make bench ({time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}, "
          f"{(time.monotonic() - started) / 60:.1f} min)\n")  # fmt: skip
    print("| benchmark | figure | value | unit | goal |")
    print("|---|---|---:|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if failed:
        print(f"\nfailed: {', '.join(failed)} (logs in var/bench-all/)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

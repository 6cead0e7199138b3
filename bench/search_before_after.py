"""Search before and after a change, in one process on one store: the ratio that survives a noisy machine.

    MEMORY_DATA_DIR=var/bench-scale/claims-1000000 .venv/bin/python bench/search_before_after.py --before fba0d7f

The store is one size's data directory of bench/search_latency.py or bench/scale.py (its user and partition).
The recall package (memory/recall/*.py) of the `--before` commit is copied into a temporary package and imported
beside the working tree's; both search() run the same `--queries` queries, alternating per query (and which goes
first alternates too), for `--rounds` rounds after one warm-up pass of each (buffers and word statistics warm).
Prints p50 / p95 of each per round and the median over rounds. Models and migrations are the working tree's, so
the `--before` recall code must read the same schema.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from bench import search_latency as latency  # noqa: E402

PACKAGE = "recall_before"
GIT = shutil.which("git") or "git"


def recall_of(commit: str, into: Path) -> ModuleType:
    """memory/recall of `commit` as the package `recall_before`, its imports of itself rewritten to match."""
    names = subprocess.run(
        [GIT, "ls-tree", "--name-only", f"{commit}:memory/recall"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    package = into / PACKAGE
    package.mkdir()
    for name in (name for name in names if name.endswith(".py")):
        text = subprocess.run(
            [GIT, "show", f"{commit}:memory/recall/{name}"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout
        (package / name).write_text(re.sub(r"\bmemory\.recall\b", PACKAGE, text))
    sys.path.insert(0, str(into))
    return importlib.import_module(f"{PACKAGE}.search")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True, help="the commit whose memory/recall is 'before'")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from config.embedded import ensure_started
    from memory.access import access_for_user
    from memory.models import User
    from memory.recall import search as after

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    access = access_for_user(user=User.objects.get(username=latency.USERNAME))
    asked = latency.queries(options.queries, latency.statements(10_000))
    with tempfile.TemporaryDirectory() as folder:
        code = {f"before ({options.before})": recall_of(options.before, Path(folder)), "after (working tree)": after}
        for query in asked:
            for module in code.values():
                module.search(access, module.SearchRequest(query=query))
        load = [os.getloadavg()[0]]
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name in code}
        for round_number in range(options.rounds):
            spent: dict[str, list[float]] = {name: [] for name in code}
            for n, query in enumerate(asked):
                order = list(code) if (n + round_number) % 2 else list(reversed(code))
                for name in order:
                    module = code[name]
                    began = time.perf_counter()
                    module.search(access, module.SearchRequest(query=query))
                    spent[name].append((time.perf_counter() - began) * 1000)
            for name, samples in spent.items():
                rounds[name].append(latency.percentiles(samples))
        load.append(os.getloadavg()[0])
    print(f"\n{len(asked)} queries, {options.rounds} rounds, load average {load[0]:.1f} -> {load[1]:.1f}\n")
    print("| code | p50 ms | p95 ms (rounds) |\n|---|---:|---|")
    for name, measured in rounds.items():
        p50 = statistics.median(r["p50"] for r in measured)
        p95 = statistics.median(r["p95"] for r in measured)
        each = ", ".join(f"{r['p95']:.1f}" for r in measured)
        print(f"| {name} | {p50:.1f} | {p95:.1f} ({each}) |")


if __name__ == "__main__":
    main()

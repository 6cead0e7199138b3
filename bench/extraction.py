"""Extraction quality: the labelled dev cases ingested through the real service, scored by the benchmark's own
scorer (`score_extraction.py`, kept beside the case file, outside the repository), whose table is printed
with a per-language table added.

    .venv/bin/python bench/extraction.py [CASES.jsonl] [--extractor rules|llm] [--only dev-01,dev-07] [--keep]
    .venv/bin/python bench/extraction.py [CASES.jsonl] --url http://127.0.0.1:8000 --token mem_...

Without `--url` it starts its own service the way `make run` does (`manage.py runall`: embedded PostgreSQL and
Redis, the web server and the Celery worker) on a temporary MEMORY_DATA_DIR and a free loopback port, with
EXTRACTOR set from `--extractor`, and scores with the full-scope token that the first start prints (a fresh,
dedicated user). `--extractor llm` needs an OpenAI-compatible endpoint: LLM_URL, LLM_MODEL, LLM_API_KEY are
passed through from the environment. With `--url` the running service's own EXTRACTOR setting applies; the
token needs the read and write scopes (edit to deactivate the bench partitions afterwards).

The scorer ingests each case into a fresh partition, waits for every receipt and reads back the tasks, claims,
Person nodes and metric readings over the REST API. Its exit codes are passed on (2: service unreachable).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import NoReturn

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.fault_drills import Drill  # noqa: E402 (the same service start and stop as the fault drills)

DEFAULT_CASES = ROOT.parent / "shared" / "bench" / "extraction-dev.jsonl"
CASE_HEADER = re.compile(r"^== (?P<case>\S+) \[(?P<lang>[^\]]*)\]")
VERDICT = re.compile(r"^   (?P<verdict>PASS|FAIL) (?P<kind>\w+) ")
PROGRESS = re.compile(r"^  \S+: (completed|failed)")
NEGATIVE_KINDS = ("no_task", "no_claim", "no_person", "no_reading")


def split_report(output: str) -> tuple[list[str], list[str], Counter[tuple[str, str, bool]]]:
    """The scorer's `--verbose` output -> (per-case blocks, the summary, verdicts counted by language and kind).

    A case block starts with "== <id> [<lang>] ..." and ends at the next blank line; every other line belongs to
    the summary (tables, failures, the last line)."""
    cases: list[str] = []
    summary: list[str] = []
    verdicts: Counter[tuple[str, str, bool]] = Counter()
    lang = ""
    for line in output.splitlines():
        header = CASE_HEADER.match(line)
        if header:
            lang = header["lang"] or "?"
        elif not line.strip():
            lang = ""
        if not lang:
            if line.strip() or (summary and summary[-1].strip()):  # one blank line where the case blocks were
                summary.append(line)
            continue
        cases.append(line)
        verdict = VERDICT.match(line)
        if verdict:
            verdicts[(lang, verdict["kind"], verdict["verdict"] == "PASS")] += 1
    return cases, summary, verdicts


def language_table(verdicts: Counter[tuple[str, str, bool]]) -> list[str]:
    def cell(held: int, total: int) -> str:
        return f"{held:>3}/{total:<3} {100.0 * held / total:5.1f}%" if total else f"{'-':>7} {'-':>6}"

    languages = sorted({lang for lang, _, _ in verdicts})
    kinds = sorted({kind for _, kind, _ in verdicts}, key=lambda kind: (kind in NEGATIVE_KINDS, kind))
    lines = ["", f"{'kind':<11} " + " ".join(f"{lang:>14}" for lang in languages) + "   (per language)"]
    for label, chosen in [(kind, (kind,)) for kind in kinds] + [("negatives", NEGATIVE_KINDS), ("all", kinds)]:
        cells = []
        for lang in languages:
            held = sum(n for (lg, kind, ok), n in verdicts.items() if lg == lang and kind in chosen and ok)
            total = sum(n for (lg, kind, _), n in verdicts.items() if lg == lang and kind in chosen)
            cells.append(f"{cell(held, total):>14}")
        lines.append(f"{label:<11} " + " ".join(cells))
    return lines


def score(scorer: Path, cases: Path, base: str, token: str, options: argparse.Namespace) -> int:
    command = [sys.executable, str(scorer), str(cases), "--base", base, "--verbose", "--wait", str(options.wait)]
    command += ["--only", options.only] if options.only else []
    command += ["--keep"] if options.keep else []
    command += ["--trusted-only"] if options.trusted_only else []
    # The token goes through the environment, not the command line (which other users can read in ps).
    environment = {**os.environ, "MEMORY_TOKEN": token}
    print(f"scoring {cases} with {scorer} ...", flush=True)
    result = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    for line in result.stderr.splitlines():  # without --verbose, leave out the scorer's receipt progress
        if options.verbose or result.returncode or not PROGRESS.match(line):
            print(line, file=sys.stderr)
    blocks, summary, verdicts = split_report(result.stdout)
    if result.stdout.strip():
        print("\n".join((blocks if options.verbose else []) + summary))
    if verdicts:
        print("\n".join(language_table(verdicts)))
    return result.returncode


def warn_if_unreachable(llm_url: str) -> None:
    """An endpoint that cannot be reached scores 0 % without an error: by design each receipt still completes
    (counts.extractionFailed), and the sources are left for a later job to extract."""
    if not llm_url:
        print("note: LLM_URL is not set; the service uses its default endpoint", file=sys.stderr)
        return
    try:
        httpx.get(f"{llm_url.rstrip('/')}/models", timeout=5)
    except httpx.HTTPError as exc:
        print(f"warning: LLM_URL {llm_url} cannot be reached ({type(exc).__name__}): expect 0 %", file=sys.stderr)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # exit 1 as the scorer does: 2 means "service unreachable"
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def main() -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="?", type=Path, default=DEFAULT_CASES, help=f"default {DEFAULT_CASES}")
    parser.add_argument("--scorer", type=Path, help="default: score_extraction.py beside the case file")
    parser.add_argument("--url", help="score a running service (e.g. `make run`) instead of starting one")
    parser.add_argument("--token", default=os.environ.get("MEMORY_TOKEN"), help="with --url; default $MEMORY_TOKEN")
    parser.add_argument("--extractor", choices=["rules", "llm"], help="the service's EXTRACTOR (default rules)")
    parser.add_argument("--only", help="comma-separated case ids")
    parser.add_argument("--wait", type=float, default=900.0, help="seconds to wait for all receipts (900)")
    parser.add_argument("--keep", action="store_true", help="keep the partitions active and the data directory")
    parser.add_argument("--trusted-only", action="store_true", help="count only trusted-band tasks")
    parser.add_argument("--verbose", action="store_true", help="print every case with what its partition holds")
    options = parser.parse_args()

    scorer = options.scorer or options.cases.parent / "score_extraction.py"
    for path in (options.cases, scorer):
        if not path.is_file():
            parser.error(f"{path} does not exist (pass the case file's path; the scorer is looked for beside it)")
    if options.url and not options.token:
        parser.error("--url needs --token (or MEMORY_TOKEN)")
    if options.url and options.extractor:
        parser.error("--extractor applies to the service this script starts; a running one keeps its own EXTRACTOR")
    extractor = options.extractor or "rules"
    if extractor == "llm":
        warn_if_unreachable(os.environ.get("LLM_URL", ""))

    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    if options.url:
        print(f"service: {options.url} (its own EXTRACTOR setting)")
        return score(scorer, options.cases, options.url.rstrip("/"), options.token, options)

    base = Path(tempfile.mkdtemp(prefix="extraction-bench-"))
    service = Drill(base / "data", settings={"EXTRACTOR": extractor})
    try:
        started = service.start()
        print(f"service: manage.py runall on {service.url}, EXTRACTOR={extractor}, started in {started:.0f} s")
        began = time.monotonic()
        code = score(scorer, options.cases, service.url, service.secret, options)
        print(f"scored in {time.monotonic() - began:.0f} s")
        return code
    finally:
        if service.process is not None:
            service.stop()
        if options.keep:
            print(f"data directory kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

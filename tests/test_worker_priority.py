"""The niceness a Celery pool process takes as it starts (WORKER_NICENESS), in fresh interpreters: the setting, a
worker started nicer already, and a value out of range. The real worker's pool is checked in
tests/memory/test_pipeline_worker.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.process import ROOT

POOL_PROCESS_PRIORITY = """
import json, os, django
django.setup()
from config.celery import yield_the_cpu_to_requests

yield_the_cpu_to_requests()
print(json.dumps({"niceness": os.getpriority(os.PRIO_PROCESS, 0)}))
"""


def niceness_of_a_pool_process(*, started_at: int, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["nice", "-n", str(started_at), sys.executable, "-c", POOL_PROCESS_PRIORITY],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", **env},
    )  # fmt: skip


def niceness(result: subprocess.CompletedProcess[str]) -> int:
    assert result.returncode == 0, result.stderr
    return int(json.loads(result.stdout.strip().splitlines()[-1])["niceness"])


# (the worker's niceness above the test's own, WORKER_NICENESS, the niceness that setting asks for)
@pytest.mark.parametrize(("started_at", "setting", "asked"), [(0, "7", 7), (0, "", 10), (15, "7", 7), (3, "0", 0)])
def test_a_pool_process_runs_at_the_configured_niceness_and_never_below_the_workers(
    started_at: int, setting: str, asked: int
) -> None:
    worker = min(19, os.getpriority(os.PRIO_PROCESS, 0) + started_at)  # `nice -n` adds to the test's own
    result = niceness_of_a_pool_process(started_at=started_at, WORKER_NICENESS=setting)

    assert niceness(result) == max(worker, asked)


def test_a_niceness_out_of_range_stops_the_start_with_a_clear_message() -> None:
    result = niceness_of_a_pool_process(started_at=0, WORKER_NICENESS="25")

    assert result.returncode != 0
    assert "WORKER_NICENESS must be between 0 and 19, got 25" in result.stderr

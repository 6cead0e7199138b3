"""What a Celery pool process gives back after a job, measured in a fresh interpreter of its own (the test process's
memory says nothing about it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FRAGMENTED_HEAP_AFTER_A_JOB = """
import json, django
django.setup()
from celery.signals import task_postrun
import config.celery  # noqa: F401  (what a worker imports: connects its signal handlers)

def resident_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

# 200 MB in blocks below glibc's mmap threshold, as a job's rows, texts and buffers are; every tenth stays alive, so
# the freed ones are holes inside the heap that free() never gives back by itself.
blocks = [bytes([n % 251]) * 100_000 for n in range(2000)]
kept = blocks[::10]
before = resident_mb()
del blocks
freed = resident_mb()
task_postrun.send(sender=None, task_id="job", task=None, args=(), kwargs={}, retval=None, state="SUCCESS")
print(json.dumps({"before": before, "freed": freed, "afterJob": resident_mb(), "kept": len(kept)}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap and /proc are Linux's")
def test_a_finished_job_gives_the_heap_it_freed_back_to_the_system() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    result = subprocess.run(
        [sys.executable, "-c", FRAGMENTED_HEAP_AFTER_A_JOB], capture_output=True, text=True, env=env, cwd=ROOT,
        timeout=120, check=True,
    )  # fmt: skip
    sizes = json.loads(result.stdout.strip().splitlines()[-1])

    assert sizes["before"] - sizes["freed"] < 50, sizes  # free() alone kept the holes (what glibc does)
    assert sizes["freed"] - sizes["afterJob"] > 100, sizes  # the end of the job returned them

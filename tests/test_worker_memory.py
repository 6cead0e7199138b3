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


POOL_PROCESS_START = """
import json, threading, django
django.setup()
from celery.signals import worker_process_init
import config.celery  # noqa: F401
from memory.embeddings import get_embedder

worker_process_init.send(sender=None)  # what Celery sends in a new pool process
for thread in threading.enumerate():
    if thread.name == "embedder-preload":
        thread.join(120)
embedder = get_embedder()
print(json.dumps({"loaded": getattr(embedder, "loaded", None), "compact": getattr(embedder, "compact", None)}))
"""


def test_a_pool_process_loads_the_embedding_model_when_it_starts(tmp_path: Path) -> None:
    # Its first job then does not wait for the model, and its idle size is the size it works at (bench/footprint.py).
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", "MEMORY_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", POOL_PROCESS_START], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
        check=True,
    )  # fmt: skip

    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"loaded": True, "compact": True}


def test_a_pool_process_of_a_remote_embedder_loads_nothing(tmp_path: Path) -> None:
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", "MEMORY_DATA_DIR": str(tmp_path),
        "EMBEDDER": "openai", "EMBEDDING_URL": "http://127.0.0.1:9/v1",
    }  # fmt: skip
    code = POOL_PROCESS_START.replace(
        'print(json.dumps({"loaded"', 'import sys; print(json.dumps({"ort": "onnxruntime" in sys.modules, "loaded"'
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=True
    )

    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"ort": False, "loaded": None, "compact": None}

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

FRAGMENTED_HEAP_AFTER_JOBS = """
import json, django
django.setup()
from celery.signals import task_postrun
import config.celery  # noqa: F401  (what a worker imports: connects its signal handlers)

def resident_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

def job(megabytes):
    # Blocks below glibc's mmap threshold, as a job's rows, texts and buffers are; every tenth stays alive, so the
    # freed ones are holes inside the heap that free() never gives back by itself.
    blocks = [bytes([n % 251]) * 100_000 for n in range(megabytes * 10)]
    kept = blocks[::10]
    del blocks
    freed = resident_mb()
    task_postrun.send(sender=None, task_id="job", task=None, args=(), kwargs={}, retval=None, state="SUCCESS")
    return {"freed": freed, "afterJob": resident_mb(), "kept": kept}

start = resident_mb()
large = job(200)
small = job(10)
print(json.dumps({"start": start, "large": large | {"kept": 0}, "small": small | {"kept": 0}}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap and /proc are Linux's")
def test_a_job_that_grew_the_process_gives_the_freed_heap_back_and_a_small_one_pays_nothing() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    result = subprocess.run(
        [sys.executable, "-c", FRAGMENTED_HEAP_AFTER_JOBS], capture_output=True, text=True, env=env, cwd=ROOT,
        timeout=120, check=True,
    )  # fmt: skip
    sizes = json.loads(result.stdout.strip().splitlines()[-1])
    large, small = sizes["large"], sizes["small"]

    assert large["freed"] - sizes["start"] > 150, sizes  # free() alone kept the holes (what glibc does)
    assert large["freed"] - large["afterJob"] > 100, sizes  # the end of the job returned them
    # A job that grew the process by less than config.heap.GROWN_MB since then leaves its holes for the next job to
    # reuse: giving them back would cost that job the page faults.
    assert small["freed"] - small["afterJob"] < 2, sizes


HEAPS_OF_THREADS = """
import ctypes, ctypes.util, os, sys, tempfile, threading
if sys.argv[1] == "service":
    import config  # noqa: F401  (every process of the service imports it first)
libc = ctypes.CDLL(ctypes.util.find_library("c"))
together = threading.Barrier(4)

def allocate():
    held = [bytearray(100_000) for _ in range(20)]  # from glibc's heaps, not Python's own small-object pools
    together.wait()  # all four threads hold their blocks at once
    del held

threads = [threading.Thread(target=allocate) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
descriptor, report = tempfile.mkstemp()
os.close(descriptor)
libc.fopen.restype = ctypes.c_void_p
stream = ctypes.c_void_p(libc.fopen(report.encode(), b"w"))
libc.malloc_info(0, stream)
libc.fclose(stream)
print(open(report).read().count("<heap nr="))
os.unlink(report)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heaps are Linux's")
def test_the_threads_of_a_service_process_share_one_heap() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}

    def heaps(kind: str) -> int:
        result = subprocess.run(
            [sys.executable, "-c", HEAPS_OF_THREADS, kind], capture_output=True, text=True, env=env, cwd=ROOT,
            timeout=60, check=True,
        )  # fmt: skip
        return int(result.stdout.strip().splitlines()[-1])

    # Four threads allocating at once: a heap each (and the main thread's) in a plain interpreter; one in all once
    # the service's package is imported, so a thread's freed buffers are not kept in a heap of its own.
    assert heaps("plain") > 1
    assert heaps("service") == 1


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
print(json.dumps({"loaded": getattr(embedder, "loaded", None)}))
"""


def test_a_pool_process_loads_the_embedding_model_when_it_starts(tmp_path: Path) -> None:
    # Its first job then does not wait for the model, and its idle size is the size it works at (bench/footprint.py).
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", "MEMORY_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", POOL_PROCESS_START], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
        check=True,
    )  # fmt: skip

    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"loaded": True}


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

    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"ort": False, "loaded": None}


HEAP_LEFT_BY_A_MODEL_LOAD = """
import ctypes, json, django
django.setup()
from config.heap import resident_bytes
from memory.embeddings.minilm import MiniLMEmbedder

MiniLMEmbedder().preload()
loaded = resident_bytes() / 2**20
ctypes.CDLL(None).malloc_trim(0)  # what would still go back to the operating system
print(json.dumps({"loaded": loaded, "trimmed": resident_bytes() / 2**20}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap and /proc are Linux's")
def test_loading_the_model_leaves_no_freed_heap_behind(tmp_path: Path) -> None:
    # onnxruntime's temporaries while it reads and optimises the model were freed into the heap and kept there: 27 MB
    # of the float form's load in every process that embeds, for its whole life (6 MB of the int8 form's).
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", "MEMORY_DATA_DIR": str(tmp_path),
        "EMBEDDING_INT8_MATMUL": "float", "EMBEDDING_THREADS": "1",
    }  # fmt: skip
    for _ in range(2):  # the first load builds the rewrite in a child process; the second loads it as a service does
        result = subprocess.run(
            [sys.executable, "-c", HEAP_LEFT_BY_A_MODEL_LOAD], capture_output=True, text=True, env=env, cwd=ROOT,
            timeout=300, check=True,
        )  # fmt: skip
    sizes = json.loads(result.stdout.strip().splitlines()[-1])

    assert sizes["loaded"] - sizes["trimmed"] < 3, sizes

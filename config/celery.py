"""The Celery app. Worker and beat start the embedded servers (when used) before they connect."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import (
    beat_init,
    celeryd_after_setup,
    celeryd_init,
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_process_shutdown,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("memory")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@celeryd_after_setup.connect
def note_jobs_at_once(instance: Any, **_: Any) -> None:
    """How many jobs this worker runs at once, as Celery resolved it, before the pool processes fork (they inherit
    it): with one, a pool process embeds the next queued job's texts while a job runs (memory.pipeline.ahead)."""
    from memory.pipeline import ahead

    solo = instance.pool_cls.__module__.rsplit(".", 1)[-1] == "solo"
    most = max([int(instance.concurrency or 0), *(int(bound) for bound in instance.autoscale or ())])
    ahead.jobs_at_once = 1 if solo else most


@celeryd_init.connect
@beat_init.connect
def start_embedded_runtime(**_: Any) -> None:
    from django.conf import settings

    from config.embedded import ensure_started

    ensure_started(settings.EMBEDDED_RUNTIME)


@worker_process_init.connect
def start_a_pool_process(**_: Any) -> None:
    """A new pool process first yields the cores to requests, then loads its embedding model."""
    yield_the_cpu_to_requests()
    preload_the_embedder()


@worker_process_shutdown.connect
def try_redis_writes_once_more(**_: Any) -> None:
    """A pool process exits without running atexit: what it still owes Redis (config.redis_retry) is tried here."""
    from config.redis_retry import tried_once_more

    tried_once_more()


def yield_the_cpu_to_requests() -> None:
    """Run at WORKER_NICENESS, so that with every core busy the scheduler serves the web's requests (a receipt, a
    search) before the pipeline's next batch, which still gets every cycle they leave. Linux keeps a niceness per
    thread and a new thread inherits its creator's: this runs before the embedder starts any thread. A niceness the
    worker was started with that is higher already stays (raising priority back would need privileges)."""
    from django.conf import settings

    if os.getpriority(os.PRIO_PROCESS, 0) < settings.WORKER_NICENESS:
        os.setpriority(os.PRIO_PROCESS, 0, settings.WORKER_NICENESS)


def preload_the_embedder() -> None:
    """Each pool process loads its embedding model as it starts, in a thread, not on its first job: that job then
    does not wait for it, and the process's idle size is the size it works at. (Pool processes once took a compact
    session of the pinned model instead; since a process gives back the heap its model load freed, the optimised
    one is smaller and faster: docs/benchmarks.md, issue 18, eighth and ninth passes.)"""
    from memory.embeddings import embedder_preload

    embedder_preload()


@task_prerun.connect
def check_database_connections(**_: Any) -> None:
    """Before each job, as Django does between requests: a connection that broke (the database restarted) or has
    outlived DB_CONN_MAX_AGE is closed, and a kept one is health-checked on its first use. Celery's own fixup would
    close them all after every job instead (CELERY_DB_REUSE_MAX in config/settings.py)."""
    from django.db import close_old_connections

    close_old_connections()


@task_postrun.connect
def release_freed_heap(**_: Any) -> None:
    """A job's rows, texts and embedding buffers are freed when it ends, but glibc keeps them in the process: give
    the free pages back once the process has grown (config.heap), so a large file's memory does not stay."""
    from config.heap import heap_release_if_grown

    heap_release_if_grown()

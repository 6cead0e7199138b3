"""The pipeline through a real Celery worker: receipts complete, interrupted jobs show and retry, lost jobs
come back on resubmission. (Real PostgreSQL, Redis and worker; committed data.)"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from memory.access import access_for_token
from memory.models import Chunk, Operation, OperationStatus
from memory.pipeline.runner import run_operation
from memory.services.ingestion import DocumentIn, ingest_document
from tests.conftest import Api, Persona, error_code, redis_left_alone
from tests.factories import UserFactory
from tests.process import celery_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.server]

CONVERSATION = {
    "conversation": {
        "id": "chat_456",
        "messages": [
            {"id": "msg_001", "role": "user", "content": "Let's continue the claims refactor.",
             "timestamp": "2026-04-26T13:00:00.000Z"},
            {"id": "msg_002", "role": "assistant", "content": "I'll inspect the plan and continue with the next slice.",
             "timestamp": "2026-04-26T13:00:12.000Z"},
        ],
    }
}  # fmt: skip


def wait_for_status(api: Api, persona: Persona, operation_id: str, wanted: set[str], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        body = api.post("/source/processing/get", persona, {"operationId": operation_id}).json()
        if body["status"] in wanted or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def test_a_conversation_is_processed_by_the_worker(api: Api, owner: Persona) -> None:
    with celery_worker(connection.settings_dict["NAME"]) as worker:
        receipt = api.post("/ingest/conversation", owner, CONVERSATION).json()
        assert receipt["status"] == "queued"
        done = wait_for_status(api, owner, receipt["operationId"], {"completed", "failed"})
        pool_niceness = {pid: _niceness(pid) for pid in _pool(worker)}
        worker_niceness = _niceness(worker.pid)
    assert done["status"] == "completed", done
    assert [step["step"] for step in done["stepsDone"]] == [
        "convert", "chunk", "embed", "extract", "reconcile", "index", "notify",
    ]  # fmt: skip
    assert done["counts"]["chunks"] == 2
    assert done["counts"]["embedded"] == 2
    chunks = Chunk.objects.order_by("authored_at")
    assert [(c.message_id, c.speaker) for c in chunks] == [("msg_001", "user"), ("msg_002", "assistant")]
    assert all(c.embedding is not None and len(c.embedding) == 384 for c in chunks)
    # Every thread of a pool process (the embedder's too) yields the cores to requests; the worker's own process,
    # which started the pool, keeps the niceness it was started with.
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert pool_niceness and all(
        threads == {max(own, django_settings.WORKER_NICENESS)} for threads in pool_niceness.values()
    )
    assert worker_niceness == {own}


def worker_backends() -> set[tuple[int, str]]:
    """The other client backends of the test database (the worker's), with when each started."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start::text FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND datname = current_database() AND pid <> pg_backend_pid()"
        )
        return set(cursor.fetchall())


def test_the_worker_keeps_its_database_connection_from_one_job_to_the_next(api: Api, owner: Persona) -> None:
    second = {"conversation": {**CONVERSATION["conversation"], "id": "chat_789"}}
    with celery_worker(connection.settings_dict["NAME"]):
        backends = []
        for body in (CONVERSATION, second):
            receipt = api.post("/ingest/conversation", owner, body).json()
            assert wait_for_status(api, owner, receipt["operationId"], {"completed", "failed"})["status"] == "completed"
            time.sleep(1)  # past the task's end, where Celery closed the connection when it was not kept
            backends.append(worker_backends())
    assert backends[0], "the worker held no connection after its job"
    assert backends[1] == backends[0]  # the same backend, started once: no new connection per job


def big_document(owner: Persona, paragraphs: int = 80) -> str:
    assert owner.token is not None
    access = access_for_token(token=owner.token, user_id=None, partition_key=None, workspace=False)
    text = "\n\n".join(
        f"Paragraph {n}: notes on the quarterly planning of project {n % 17}, " * 6 for n in range(paragraphs)
    )
    return ingest_document(access=access, document=DocumentIn(id="big", content=text)).operation.pk


def test_a_job_killed_mid_way_reads_interrupted_and_retry_completes_it(api: Api, owner: Persona, settings: Any) -> None:
    settings.PIPELINE_TIME_LIMIT_S = 1  # the job is sent with a one-second hard limit and dies mid-way
    with celery_worker(connection.settings_dict["NAME"]):
        # ~140 chunks of ~180 tokens: seconds of embedding, however fast the embedder (80 paragraphs were
        # done within the second now and then once the dynamic form was fused: the test then saw "completed").
        operation_id = big_document(owner, paragraphs=300)
        interrupted = wait_for_status(api, owner, operation_id, {"failed", "completed"})
    settings.PIPELINE_TIME_LIMIT_S = 900
    assert interrupted["status"] == "failed", interrupted
    assert interrupted["errorCode"] == "PROCESSING_INTERRUPTED"
    assert Operation.objects.get(pk=operation_id).status == "processing"  # the projection changed nothing
    with celery_worker(connection.settings_dict["NAME"]):
        retried = api.post("/source/processing/retry", owner, {"operationId": operation_id})
        assert retried.status_code == 202
        assert retried.json()["status"] in {"queued", "processing", "completed"}
        done = wait_for_status(api, owner, operation_id, {"completed", "failed"}, timeout=180)
    assert done["status"] == "completed", done
    assert done["attempts"] == 2
    assert Chunk.objects.filter(embedding__isnull=True).count() == 0


def _niceness(pid: int) -> set[int]:
    """The niceness of each of the process's threads (Linux keeps one per thread); a thread that ended meanwhile
    (the embedder's preload thread ends once the model is loaded) is left out."""
    found = set()
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            found.add(int(stat.read_text().rsplit(")", 1)[1].split()[16]))  # field 19 of /proc/<pid>/task/<tid>/stat
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def _pool(worker: Any) -> set[int]:
    return {int(pid) for pid in Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()}


def test_a_pool_process_recycled_for_memory_finishes_its_job_and_the_next_job_runs(api: Api, owner: Persona) -> None:
    # A one-megabyte limit: every pool process is over it after its first job, so each job ends with a recycle.
    with celery_worker(connection.settings_dict["NAME"], WORKER_MAX_MEMORY_MB="1") as worker:
        first_pool = _pool(worker)
        first = api.post("/ingest/conversation", owner, CONVERSATION).json()
        done = wait_for_status(api, owner, first["operationId"], {"completed", "failed"})
        deadline = time.monotonic() + 60
        while not (_pool(worker) and _pool(worker).isdisjoint(first_pool)) and time.monotonic() < deadline:
            time.sleep(0.1)
        replaced = _pool(worker)
        operation_id = big_document(owner, paragraphs=3)
        second = wait_for_status(api, owner, operation_id, {"completed", "failed"})
    assert done["status"] == "completed", done
    assert done["attempts"] == 1  # finished by the process that was then recycled, not run again
    assert replaced and replaced.isdisjoint(first_pool)
    assert second["status"] == "completed", second


def test_retrying_a_completed_operation_is_a_conflict(api: Api, owner: Persona) -> None:
    with celery_worker(connection.settings_dict["NAME"]):
        receipt = api.post("/ingest/conversation", owner, CONVERSATION).json()
        wait_for_status(api, owner, receipt["operationId"], {"completed"})
    response = api.post("/source/processing/retry", owner, {"operationId": receipt["operationId"]})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CONFLICT"


def test_resubmitting_restores_a_job_the_queue_lost(api: Api, owner: Persona) -> None:
    receipt = api.post("/ingest/conversation", owner, CONVERSATION).json()
    redis.Redis.from_url(django_settings.REDIS_URL).flushdb()  # the queue loses the job after the commit
    with celery_worker(connection.settings_dict["NAME"]):
        time.sleep(2)
        assert (
            api.post("/source/processing/get", owner, {"operationId": receipt["operationId"]}).json()["status"]
            == "queued"
        )
        again = api.post("/ingest/conversation", owner, CONVERSATION).json()
        assert again["deduplicated"] is True
        assert again["operationId"] == receipt["operationId"]
        done = wait_for_status(api, owner, receipt["operationId"], {"completed", "failed"})
    assert done["status"] == "completed"


def _kill_worker(worker: Any) -> None:
    """SIGKILL the worker's main process and its pool: the whole worker dies mid-job without a word."""
    pool = [int(pid) for pid in Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()]
    for pid in [worker.pid, *pool]:
        os.kill(pid, signal.SIGKILL)
    worker.wait()


def test_a_killed_worker_leaves_an_interrupted_receipt_whose_redelivered_job_resumes(
    api: Api, owner: Persona, settings: Any
) -> None:
    settings.OPERATION_STALE_AFTER_S = 3  # how this process (the API) judges a heartbeat
    database = connection.settings_dict["NAME"]
    with celery_worker(database, OPERATION_HEARTBEAT_S="1") as worker:
        operation_id = big_document(owner, paragraphs=400)
        deadline = time.monotonic() + 60
        while Operation.objects.get(pk=operation_id).status == "queued" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert Operation.objects.get(pk=operation_id).status == "processing"
        _kill_worker(worker)
    stranded = wait_for_status(api, owner, operation_id, {"failed", "completed"}, timeout=30)
    assert (stranded["status"], stranded["errorCode"]) == ("failed", "PROCESSING_INTERRUPTED"), stranded
    # The job was never acknowledged: a new worker gets it back once the queue's visibility timeout has passed,
    # and it resumes the receipt (nobody pressed retry).
    with celery_worker(database, QUEUE_VISIBILITY_TIMEOUT_S="1", OPERATION_HEARTBEAT_S="1"):
        done = wait_for_status(api, owner, operation_id, {"completed"}, timeout=120)
    assert done["status"] == "completed", done
    assert done["attempts"] == 2
    assert Chunk.objects.filter(embedding__isnull=True).count() == 0


def test_a_job_redelivered_again_and_again_ends_failed_instead_of_looping(settings: Any) -> None:
    user = UserFactory.create()
    operation = Operation.objects.create(
        owner=user, partition=user.partitions.get(key="memory:personal"), source_version=1,
        status=OperationStatus.PROCESSING, attempts=3, task_id="job-1", runner="elsewhere:1",
    )  # fmt: skip
    Operation.objects.filter(pk=operation.pk).update(heartbeat_at=None, started_at=None)
    run_operation(operation.pk, task_id="job-1")
    operation.refresh_from_db()
    assert (operation.status, operation.error_code) == ("failed", "PROCESSING_INTERRUPTED")


def test_a_receipt_whose_runner_is_gone_reads_interrupted_and_can_be_retried(api: Api, owner: Persona) -> None:
    operation_id = big_document(owner, paragraphs=2)
    # A worker on this host took it and died: its process no longer exists (pid 0 is never a job's runner).
    Operation.objects.filter(pk=operation_id).update(
        status=OperationStatus.PROCESSING, runner=f"{socket.gethostname()}:0", task_id="lost-job"
    )
    view = api.post("/source/processing/get", owner, {"operationId": operation_id}).json()
    assert (view["status"], view["errorCode"]) == ("failed", "PROCESSING_INTERRUPTED")
    retried = api.post("/source/processing/retry", owner, {"operationId": operation_id})
    assert retried.status_code == 202, retried.json()
    assert Operation.objects.get(pk=operation_id).status == "queued"


def test_a_receipt_read_while_redis_is_away_answers_503_without_asking_it(
    api: Api, owner: Persona, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its job's state is in the result backend (config.cache.asked_of_redis: RedisAway at once, no timeout)."""

    operation_id = big_document(owner, paragraphs=1)
    Operation.objects.filter(pk=operation_id).update(task_id="sent-job")  # sent: its state is asked
    redis_left_alone(monkeypatch)
    answer = api.post("/source/processing/get", owner, {"operationId": operation_id})
    assert answer.status_code == 503 and error_code(answer) == "SERVICE_UNAVAILABLE", answer.content


def test_another_user_reading_a_receipt_while_redis_is_away_is_told_it_does_not_exist(
    api: Api, owner: Persona, other: Persona, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The receipt's reach is checked before its job's state is asked: 404, not a 503 that would say it exists."""
    operation_id = big_document(owner, paragraphs=1)
    Operation.objects.filter(pk=operation_id).update(task_id="sent-job")
    redis_left_alone(monkeypatch)
    answer = api.post("/source/processing/get", other, {"operationId": operation_id})
    assert answer.status_code == 404 and error_code(answer) == "NOT_FOUND", answer.content

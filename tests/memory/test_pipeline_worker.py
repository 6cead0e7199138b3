"""The pipeline through a real Celery worker: receipts complete, interrupted jobs show and retry, lost jobs
come back on resubmission. (Real PostgreSQL, Redis and worker; committed data.)"""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from memory.access import access_for_token
from memory.models import Chunk, Operation
from memory.services.ingestion import DocumentIn, ingest_document
from tests.conftest import Api, Persona
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
    with celery_worker(connection.settings_dict["NAME"]):
        receipt = api.post("/ingest/conversation", owner, CONVERSATION).json()
        assert receipt["status"] == "queued"
        done = wait_for_status(api, owner, receipt["operationId"], {"completed", "failed"})
    assert done["status"] == "completed", done
    assert [step["step"] for step in done["stepsDone"]] == [
        "convert", "chunk", "embed", "extract", "reconcile", "index", "notify",
    ]  # fmt: skip
    assert done["counts"]["chunks"] == 2
    assert done["counts"]["embedded"] == 2
    chunks = Chunk.objects.order_by("authored_at")
    assert [(c.message_id, c.speaker) for c in chunks] == [("msg_001", "user"), ("msg_002", "assistant")]
    assert all(c.embedding is not None and len(c.embedding) == 384 for c in chunks)


def big_document(owner: Persona) -> str:
    assert owner.token is not None
    access = access_for_token(token=owner.token, user_id=None, partition_key=None, workspace=False)
    text = "\n\n".join(f"Paragraph {n}: notes on the quarterly planning of project {n % 17}, " * 6 for n in range(80))
    return ingest_document(access=access, document=DocumentIn(id="big", content=text)).operation.pk


def test_a_job_killed_mid_way_reads_interrupted_and_retry_completes_it(api: Api, owner: Persona, settings: Any) -> None:
    settings.PIPELINE_TIME_LIMIT_S = 1  # the job is sent with a one-second hard limit and dies mid-way
    with celery_worker(connection.settings_dict["NAME"]):
        operation_id = big_document(owner)
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

"""Two jobs (or a job and a person) that lock the same rows in opposite orders deadlock; PostgreSQL aborts one of
them. A pipeline step that loses such a race runs again instead of failing its receipt (issue 12: found by the
ingestion throughput run, where 4 of 80 receipts failed on a deadlock in the task lock)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, transaction

from commitments.services import task_lock
from memory.models import Claim, Node, Operation, Source
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona
from tests.races import wait_until_blocked

pytestmark = pytest.mark.django_db(transaction=True)


def said(api: Api, persona: Persona, text: str, n: int) -> str:
    body = {"conversation": {"id": "chat", "messages": [
        {"id": f"m{n}", "role": "user", "content": text, "timestamp": f"2026-11-03T09:0{n}:00Z"},
    ]}}  # fmt: skip
    return str(api.post("/ingest/conversation", persona, body).json()["operationId"])


def test_a_step_that_loses_a_deadlock_runs_again(api: Api, owner: Persona) -> None:
    run_operation(said(api, owner, "I'll send the spec to Marcel by Friday.", 1))
    task = Node.objects.get(type="Task")
    operation_id = said(api, owner, "I'll send the spec to Marcel by Monday.", 2)
    locked_source = Operation.objects.get(pk=operation_id).source_id
    errors: list[BaseException] = []
    holding = threading.Event()

    def the_other_side() -> None:
        """Holds the task, waits until the job waits for it, then asks for the source the job holds."""
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL deadlock_timeout = '20s'")  # the job detects the cycle, not we
                task_lock(task)
                holding.set()
                assert wait_until_blocked(30), "the job never waited for the task"
                Source.objects.select_for_update().filter(pk=locked_source).first()
        except BaseException as exc:
            errors.append(exc)
        finally:
            holding.set()
            connection.close()

    other = threading.Thread(target=the_other_side)
    other.start()
    assert holding.wait(30)
    run_operation(operation_id)
    other.join(60)
    assert not errors, errors
    receipt = Operation.objects.get(pk=operation_id)
    assert (receipt.status, receipt.error_code) == ("completed", ""), receipt.error_message
    due: Any = Claim.objects.get(subject=task, predicate="DUE_ON", status="active").object_value
    assert due == "2026-11-09"

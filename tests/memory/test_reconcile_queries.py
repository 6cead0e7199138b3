"""What one reconcile costs in queries does not grow with how often a job names the same people (issue 18: a
chat names its speakers in nearly every turn, and each mention looked the person up and touched last_seen_at)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import Claim, Node
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db

THINGS = ["the spec", "the budget", "the slides", "the invoice", "the garden plan", "the room", "the agenda"]


def _node_queries(api: Api, owner: Persona, turns: int) -> tuple[int, int]:
    """Lookups of a node by name and last_seen_at touches of a job whose `turns` messages each name Marcel."""
    messages = [
        {"id": f"m{n}", "role": "user", "content": f"Marcel will send {THINGS[n]} by Friday.",
         "timestamp": f"2026-04-22T10:{n:02d}:00Z"}
        for n in range(turns)
    ]  # fmt: skip
    receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": f"c{turns}", "messages": messages}})
    with CaptureQueriesContext(connection) as queries:
        run_operation(receipt.json()["operationId"])
    sql = [query["sql"] for query in queries.captured_queries]
    lookups = sum(s.startswith("SELECT") and 'INNER JOIN "memory_alias"' in s for s in sql)
    touches = sum(s.startswith('UPDATE "memory_node"') and "last_seen_at" in s for s in sql)
    return lookups, touches


def test_a_job_looks_up_and_touches_a_person_once_however_often_it_is_named(api: Api, owner: Persona) -> None:
    assert _node_queries(api, owner, 2) == (1, 1)
    assert _node_queries(api, owner, 7) == (1, 1)
    marcel = Node.objects.get(type="Person", label="Marcel")
    assert Claim.objects.filter(predicate="OWNED_BY", object_node=marcel, status="active").count() == 7
    # Seen when the newest message of the jobs named him, however the touches were grouped.
    assert marcel.last_seen_at == datetime(2026, 4, 22, 10, 6, tzinfo=UTC)


def test_last_seen_only_moves_forward_when_an_older_chat_names_a_person_again(api: Api, owner: Persona) -> None:
    def say(conversation: str, day: str) -> None:
        message = {"id": "m", "role": "user", "content": "Marcel will send the spec by Friday.", "timestamp": day}
        receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": conversation, "messages": [message]}})
        run_operation(receipt.json()["operationId"])

    say("new", "2026-04-22T10:00:00Z")
    say("old", "2025-01-02T10:00:00Z")
    assert Node.objects.get(type="Person", label="Marcel").last_seen_at == datetime(2026, 4, 22, 10, tzinfo=UTC)


def test_a_task_rescheduled_in_several_turns_of_one_job_is_locked_and_read_once(api: Api, owner: Persona) -> None:
    def post(conversation: str, lines: list[str]) -> list[str]:
        messages = [
            {"id": f"m{n}", "role": "user", "content": line, "timestamp": f"2026-04-20T10:{n:02d}:00Z"}
            for n, line in enumerate(lines)
        ]
        receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": conversation, "messages": messages}})
        with CaptureQueriesContext(connection) as queries:
            run_operation(receipt.json()["operationId"])
        return [query["sql"] for query in queries.captured_queries]

    post("plan", ["I have to present the roadmap to the board on Monday."])  # said on a Monday: the next one
    task = Node.objects.get(type="Task")
    moves = ["Heads up: the roadmap presentation moved to Wednesday.",
             "Sorry, the roadmap presentation moved to Thursday.",
             "Again: the roadmap presentation moved to Friday."]  # fmt: skip
    sql = post("moves", moves)
    locks = [s for s in sql if "FOR UPDATE" in s and task.pk in s]
    due_reads = [s for s in sql if s.startswith("SELECT") and "DUE_ON" in s and '"memory_claim"' in s]
    assert len(locks) == 1 and len(due_reads) == 1, (locks, due_reads)
    # Each move superseded the one before; the last one stands.
    dues = Claim.objects.filter(subject=task, predicate="DUE_ON").order_by("pk")
    assert [(due.object_value, due.status) for due in dues] == [
        ("2026-04-27", "superseded"), ("2026-04-22", "superseded"), ("2026-04-23", "superseded"),
        ("2026-04-24", "active"),
    ]  # fmt: skip
    assert [due.superseded_by_id for due in dues[:3]] == [due.pk for due in dues[1:]]

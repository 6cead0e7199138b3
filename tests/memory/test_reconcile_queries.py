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

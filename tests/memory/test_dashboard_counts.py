"""memory/dashboard.py: the dashboard's counts from real pipeline data, per partition choice."""

from __future__ import annotations

import pytest

from memory.access import access_for_user
from memory.dashboard import dashboard_counts, recent_operations
from memory.models import Claim, User
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db


def say(api: Api, persona: Persona, chat: str, text: str, partition: str | None = None) -> str:
    body: dict[str, object] = {"conversation": {"id": chat, "messages": [
        {"id": f"{chat}-1", "role": "user", "content": text, "timestamp": "2026-04-22T10:00:00Z"}]}}  # fmt: skip
    if partition:
        body["partitionKey"] = partition
    receipt = api.post("/ingest/conversation", persona, body).json()
    run_operation(receipt["operationId"])
    return str(receipt["operationId"])


def test_counts_follow_the_pipeline_and_the_partition_choice(api: Api, owner: Persona, other: Persona) -> None:
    PartitionFactory.create(owner=owner.user, key="project:apollo", label="Apollo")
    say(api, owner, "a", "I prefer morning meetings. I live in Utrecht.")
    say(api, owner, "b", "I need to book the venue by Friday.", partition="project:apollo")
    say(api, other, "c", "I prefer tea.")
    personal = dashboard_counts(access_for_user(user=_user(owner)))
    workspace = dashboard_counts(access_for_user(user=_user(owner), workspace=True))
    mine = Claim.objects.filter(owner=owner.user)
    assert personal.claims["active"] == mine.filter(status="active", partition__key="memory:personal").count() >= 2
    assert workspace.claims["active"] == mine.filter(status="active").count() > personal.claims["active"]
    assert (personal.sources, workspace.sources) == (1, 2)
    assert workspace.open_commitments == personal.open_commitments + 1  # the Apollo task
    Claim.objects.filter(pk=mine.filter(status="active", partition__key="memory:personal").first().pk).update(  # type: ignore[union-attr]
        status="quarantined"
    )
    after = dashboard_counts(access_for_user(user=_user(owner)))
    assert after.review["quarantined"] == 1 and after.waiting_for_review == personal.waiting_for_review + 1
    assert len(recent_operations(access_for_user(user=_user(owner)))) == 1


def _user(persona: Persona) -> User:
    assert persona.user is not None
    return persona.user

"""The memory version (memory.services.audit): it moves on after a committed write search or the atlas reads, and
only then, so what a quiet memory's searches keep at the version outlives a token issued or a metric logged."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import transaction
from django.db.models import Max

from memory.access import Actor
from memory.models import Chunk, Claim, Node, Partition, Source, User
from memory.services.audit import audit_record, memory_version
from memory.services.tokens import token_issue, token_revoke
from metrics.models import MetricDefinition
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db(transaction=True)  # the version moves on once a write commits


def what_recall_reads(owner: User) -> list[Any]:
    """How many rows of each table search and the atlas read, and when the last of them changed."""
    state: list[Any] = []
    for model in (Source, Chunk, Claim, Node, Partition):
        rows = model.objects.filter(owner=owner)
        changed = rows.aggregate(last=Max("updated_at"))["last"] if hasattr(model, "updated_at") else None
        state += [rows.count(), changed]
    return state


def ok(response: Any) -> Any:
    assert response.status_code in (200, 201, 202), response.content
    return response.json()


def test_a_write_search_reads_moves_the_version_on(api: Api, owner: Persona, alice: User) -> None:
    before = memory_version(alice.pk)
    ok(api.post("/memory/save", owner, {"key": "editor", "value": "Helix"}))
    assert memory_version(alice.pk) == before + 1


def test_an_action_not_known_to_leave_recall_alone_moves_the_version_on(alice: User) -> None:
    before = memory_version(alice.pk)
    with transaction.atomic():
        audit_record(actor=Actor.system(), owner=alice, action="something.new", target_type="thing", target_id="1")
        assert memory_version(alice.pk) == before  # not before the commit
    assert memory_version(alice.pk) == before + 1


def test_writes_search_never_reads_leave_the_version_and_what_it_reads_alone(
    api: Api, owner: Persona, alice: User
) -> None:
    ok(api.post("/memory/save", owner, {"key": "editor", "value": "Helix"}))  # something to read
    before, rows = memory_version(alice.pk), what_recall_reads(alice)
    at = datetime.now(UTC).isoformat()
    ok(api.post("/session/create", owner, {"title": "Apollo", "agent": "claude-code"}))
    ok(api.post("/metrics/observations", owner, {"slug": "body_weight", "value": 80.0, "unit": "kg", "occurredAt": at}))
    bulk = {"observations": [{"slug": "body_weight", "value": 79.5, "occurredAt": at}]}
    ok(api.post("/metrics/observations/bulk", owner, bulk))
    ok(api.client.put("/artifact", b"notes", content_type="text/plain", headers=owner.headers))
    exported = api.post("/maintenance/export", owner, {})
    assert exported.status_code == 200 and b"".join(exported.streaming_content)
    token_revoke(actor=Actor.system(), token=token_issue(actor=Actor.system(), owner=alice, label="Laptop").token)
    assert (memory_version(alice.pk), what_recall_reads(alice)) == (before, rows)


def test_a_metric_s_review_task_moves_the_version_on_and_deciding_it_only_by_the_task_s_status(
    api: Api, owner: Persona, alice: User
) -> None:
    from metrics.services import metric_keep, metric_merge
    from tests.metrics.test_metric_review import access, flagged

    before = memory_version(alice.pk)
    _, duplicate = flagged(api, owner)  # a "Review metric" task: a node search reads
    assert Node.objects.filter(pk=duplicate.review_task_id).exists()
    assert memory_version(alice.pk) > before
    before = memory_version(alice.pk)
    metric_keep(access(owner), metric_id=duplicate.pk)
    assert memory_version(alice.pk) == before + 1  # the task's status claim; "metric.keep" none
    reading = {"slug": "kg_weight", "value": 80.1, "label": "Weight kg", "unit": "kg", "occurredAt": "2026-03-04"}
    again = api.post("/metrics/observations", owner, reading)
    assert again.status_code == 201, again.content
    other = MetricDefinition.objects.get(slug="kg_weight")
    assert other.needs_review and other.review_task_id
    before = memory_version(alice.pk)
    metric_merge(access(owner), metric_id=other.pk)
    assert not MetricDefinition.objects.filter(pk=other.pk).exists()
    assert memory_version(alice.pk) == before + 1


def test_a_change_of_version_made_late_makes_no_counter_for_an_owner_redis_holds_none_of(alice: User) -> None:
    from django.core.cache import cache

    from memory.services.audit import memory_version_key, memory_version_moved_on_if_kept

    before = memory_version(alice.pk)
    memory_version_moved_on_if_kept(alice.pk)  # Redis was away as a write committed; it is back
    assert memory_version(alice.pk) == before + 1
    cache.delete(memory_version_key(alice.pk))  # their account erased meanwhile
    memory_version_moved_on_if_kept(alice.pk)
    assert cache.get(memory_version_key(alice.pk)) is None

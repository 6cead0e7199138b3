"""seeds/000's invariant: a Task has exactly one active HAS_TASK_STATUS (unless dismissed), under every path and
under concurrent writes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from commitments.services import status_set, task_create
from memory.access import Actor
from memory.models import Claim, MemoryEvent, Node
from tests.factories import ClaimFactory, NodeFactory

pytestmark = pytest.mark.django_db


def active_statuses(task: Node) -> list[Any]:
    return list(
        Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS", status="active").values_list(
            "object_value", flat=True
        )
    )


def test_a_task_created_without_a_status_gets_a_candidate_pending_one(alice) -> None:
    from memory.models import Partition

    personal = Partition.objects.get(owner=alice, key="memory:personal")
    task, claim = task_create(owner=alice, partition=personal, label="Renew passport", actor=Actor.system())
    assert (claim.object_value, claim.origin, claim.status) == ("pending", "assistant_inferred", "active")
    assert active_statuses(task) == ["pending"]
    assert MemoryEvent.objects.filter(action="task.create", target_id=task.pk).exists()


def test_a_new_status_supersedes_the_old_and_keeps_history(alice) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    first = status_set(task, "pending", actor=Actor.system(), origin="user_stated")
    second = status_set(task, "completed", actor=Actor.system(), origin="manual")
    first.refresh_from_db()
    assert (first.status, first.superseded_by_id, second.derived_from_id) == ("superseded", second.pk, first.pk)
    assert active_statuses(task) == ["completed"]


def test_the_database_refuses_a_second_active_status(alice) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    status_set(task, "pending", actor=Actor.system(), origin="user_stated")
    with pytest.raises(IntegrityError), transaction.atomic():
        ClaimFactory.create(owner=alice, partition=task.partition, subject=task, predicate="HAS_TASK_STATUS",
                            object_value="completed", status="active")  # fmt: skip


def test_a_quarantined_status_supersedes_nothing(alice) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    status_set(task, "pending", actor=Actor.system(), origin="user_stated")
    held = status_set(task, "completed", actor=Actor.system(), origin="assistant_inferred", quarantined=True)
    assert held.status == "quarantined"
    assert active_statuses(task) == ["pending"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_status_changes_leave_exactly_one_active(alice) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    status_set(task, "pending", actor=Actor.system(), origin="user_stated")
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def change(status: str) -> None:
        try:
            barrier.wait()
            status_set(Node.objects.get(pk=task.pk), status, actor=Actor.system(), origin="manual")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=change, args=(s,)) for s in ("in_progress", "completed", "abandoned", "pending")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(active_statuses(task)) == 1
    assert Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS").count() == 5


def test_merging_two_tasks_keeps_the_targets_status_current(alice) -> None:
    from memory.access import access_for_user
    from memory.services.nodes import node_merge

    keep = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    duplicate = NodeFactory.create(owner=alice, type="Task", label="Send spec to Marcel")
    status_set(keep, "in_progress", actor=Actor.system(), origin="manual")
    old = status_set(duplicate, "pending", actor=Actor.system(), origin="user_stated")
    access = access_for_user(user=alice)
    preview = node_merge(access=access, source_id=duplicate.pk, target_id=keep.pk)
    applied = node_merge(access=access, source_id=duplicate.pk, target_id=keep.pk, apply=True)
    assert preview.as_dict() == applied.as_dict()
    assert applied.superseded == 1
    assert active_statuses(keep) == ["in_progress"]
    assert Claim.objects.get(pk=old.pk).status == "superseded"

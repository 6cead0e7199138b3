"""Every path that changes a task's status goes through `status_set`, under the task lock (issue 12, items 2
and 3): claim corrections and confirmations of status claims, confirm racing set-status, and due dates written
by two jobs at once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import date
from typing import Any

import pytest

from commitments.services import commitment_confirm, commitment_set_status, status_set, task_lock
from memory.access import Actor, access_for_user
from memory.errors import Conflict
from memory.extraction.base import EvidenceRef, Extraction, TaskCandidate
from memory.models import Claim, MemoryEvent, Node, Source
from memory.services.claims import claim_correct, claim_erase
from memory.services.reconcile import reconcile
from tests.conftest import Api, Persona, error_code
from tests.factories import NodeFactory
from tests.races import race

pytestmark = pytest.mark.django_db


def statuses(task: Node) -> list[tuple[Any, str]]:
    claims = Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS").order_by("recorded_at", "id")
    return [(claim.object_value, claim.status) for claim in claims]


def active(task: Node, predicate: str = "HAS_TASK_STATUS") -> list[Any]:
    return list(
        Claim.objects.filter(subject=task, predicate=predicate, status="active").values_list("object_value", flat=True)
    )


def test_correcting_a_status_claim_sets_the_status_through_the_one_service(api: Api, owner: Persona, alice) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    pending = status_set(task, "pending", actor=Actor.system(), origin="assistant_inferred")
    response = api.post("/claim/correct", owner, {"claimId": pending.pk, "statement": "done", "value": "completed"})
    assert response.status_code == 200, response.json()
    assert statuses(task) == [("pending", "superseded"), ("completed", "active")]
    pending.refresh_from_db()
    new = Claim.objects.get(subject=task, status="active")
    assert (pending.superseded_by_id, new.derived_from_id, new.origin) == (new.pk, pending.pk, "manual")
    assert MemoryEvent.objects.filter(action="task.status", target_id=task.pk).count() == 2


def test_correcting_a_status_claim_to_no_known_status_is_refused_without_writes(
    api: Api, owner: Persona, alice
) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    pending = status_set(task, "pending", actor=Actor.system(), origin="assistant_inferred")
    response = api.post("/claim/correct", owner, {"claimId": pending.pk, "statement": "Send it on Monday."})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert "/commitments/set-status" in response.json()["error"]["message"]
    assert statuses(task) == [("pending", "active")]


def test_confirming_a_quarantined_status_supersedes_the_active_one(api: Api, owner: Persona, alice) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    status_set(task, "pending", actor=Actor.system(), origin="user_stated")
    held = status_set(task, "completed", actor=Actor.system(), origin="assistant_inferred", quarantined=True)
    response = api.post("/claim/confirm", owner, {"claimId": held.pk})
    assert response.status_code == 200, response.json()
    assert active(task) == ["completed"]
    held.refresh_from_db()
    assert held.status == "superseded"


@pytest.mark.django_db(transaction=True)
def test_confirm_racing_set_status_never_brings_back_the_old_status(alice) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    status_set(task, "pending", actor=Actor.system(), origin="assistant_inferred")
    access = access_for_user(user=alice)
    race(
        holder=lambda: commitment_set_status(access, task.pk, "completed"),
        contender=lambda: commitment_confirm(access, task.pk),
    )
    assert active(task) == ["completed"]


@pytest.mark.django_db(transaction=True)
def test_two_jobs_setting_a_due_date_leave_one_current_date(api: Api, owner: Persona, alice) -> None:
    body = {"conversation": {"id": "c", "messages": [{"id": "m1", "role": "user", "content": "notes"}]}}
    source_id = api.post("/ingest/conversation", owner, body).json()["sourceId"]
    source = Source.objects.get(pk=source_id)
    task = NodeFactory.create(owner=alice, partition=source.partition, type="Task", label="Send the spec")
    status_set(task, "pending", actor=Actor.system(), origin="user_stated")

    def due(day: int) -> Callable[[], object]:
        evidence = EvidenceRef(source_id=source_id, excerpt="Send the spec", message_id=f"m{day}")
        candidate = TaskCandidate(label="Send the spec", evidence=evidence, due_on=date(2026, 5, day))
        return lambda: Counter(reconcile(source=source, extraction=Extraction(tasks=[candidate]), extractor="rules"))

    race(holder=due(4), contender=due(5))
    assert active(task, "DUE_ON") == ["2026-05-05"]


def test_erasing_the_current_status_makes_the_previous_one_current(api: Api, owner: Persona, alice) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    status_set(task, "pending", actor=Actor.system(), origin="user_stated")
    started = status_set(task, "in_progress", actor=Actor.system(), origin="user_stated")
    answer = api.post("/claim/delete", owner, {"claimId": started.pk}).json()
    assert answer == {"claimId": started.pk, "erasedRevisions": 1}
    assert statuses(task) == [("pending", "active")]


@pytest.mark.django_db(transaction=True)
def test_correcting_a_status_while_set_status_runs_never_deadlocks(alice) -> None:
    """set-status holds the task lock; the correction must wait for it before it locks the status row, or the
    two take the same locks in opposite orders."""
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    pending = status_set(task, "pending", actor=Actor.system(), origin="assistant_inferred")
    access = access_for_user(user=alice)
    race(
        holder=lambda: task_lock(task),
        then=lambda: commitment_set_status(access, task.pk, "completed"),
        contender=lambda: claim_correct(access=access, claim_id=pending.pk, statement="started", value="in_progress"),
        allowed=(Conflict,),  # the corrected revision was superseded meanwhile: correct the current one
    )
    assert active(task) == ["completed"]


@pytest.mark.django_db(transaction=True)
def test_erasing_a_status_while_set_status_runs_leaves_one_active_status(alice) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    status_set(task, "pending", actor=Actor.system(), origin="user_stated")
    started = status_set(task, "in_progress", actor=Actor.system(), origin="user_stated")
    access = access_for_user(user=alice)
    race(
        holder=lambda: claim_erase(access=access, claim_id=started.pk),
        contender=lambda: commitment_set_status(access, task.pk, "completed"),
    )
    assert active(task) == ["completed"]
    assert [value for value, _ in statuses(task)] == ["pending", "completed"]

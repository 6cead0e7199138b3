"""Commitments over REST (seeds/000): what is open comes from each task's current status, the trusted and
candidate bands, a person's decisions on a task, the statusless-task recovery, the digest's buckets, and who
may do what."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from commitments.selectors import open_commitments
from commitments.services import commitment_set_status, status_set, task_create
from memory.access import Actor, access_for_user
from memory.models import Claim, MemoryEvent, Node, Partition, Source, User
from memory.pipeline.runner import run_operation
from memory.services.graph import self_node
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import ClaimFactory, NodeFactory, PartitionFactory

pytestmark = pytest.mark.django_db

DAY = "2026-04-22"  # a Wednesday: "by Friday" is 2026-04-24
STATED = datetime(2026, 4, 22, 9, tzinfo=UTC)
MISSING_TASK = "node_01kq5509kfe4a94mj5k20j5z6y"
WRITES = ("/commitments/confirm", "/commitments/dismiss", "/commitments/set-status")
ENDPOINTS: dict[str, dict[str, Any]] = {
    "/commitments/open": {},
    "/commitments/list": {},
    "/commitments/confirm": {"taskId": MISSING_TASK},
    "/commitments/dismiss": {"taskId": MISSING_TASK},
    "/commitments/set-status": {"taskId": MISSING_TASK, "status": "completed"},
    "/maintenance/recover-statusless-commitments": {},
    "/cleanup": {},
    "/digest": {"date": DAY, "timeZone": "UTC"},
}


def say(api: Api, persona: Persona, *texts: str, conversation: str = "chat") -> None:
    """Messages of the user in one conversation, processed at once."""
    messages = [
        {"id": f"{conversation}-m{n}", "role": "user", "content": text, "timestamp": f"{DAY}T10:00:{n:02d}Z"}
        for n, text in enumerate(texts)
    ]
    response = api.post("/ingest/conversation", persona, {"conversation": {"id": conversation, "messages": messages}})
    assert response.status_code == 202, response.content
    run_operation(response.json()["operationId"])


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    return dict(response.json())


def refused(response: Any) -> tuple[int, str]:
    return response.status_code, error_code(response)


def personal(user: User) -> Partition:
    return Partition.objects.get(owner=user, key="memory:personal")


def make_task(
    user: User,
    label: str,
    *,
    status: str = "pending",
    origin: str = "user_stated",
    due: str | None = None,
    owned_by: Node | None = None,
) -> Node:
    """A task with a current status and, if given, a due date and an owner, written the way reconcile does."""
    task = NodeFactory.create(owner=user, type="Task", label=label)
    status_set(task, status, actor=Actor.system(), origin=origin)
    if due is not None:
        ClaimFactory.create(
            owner=user,
            subject=task,
            kind="fact",
            predicate="DUE_ON",
            object_value=due,
            statement=f"{label} is due on {due}.",
            stated_at=STATED,
        )
    if owned_by is not None:
        ClaimFactory.create(
            owner=user,
            subject=task,
            kind="fact",
            predicate="OWNED_BY",
            object_node=owned_by,
            statement=f"{owned_by.label} owns {label}.",
            stated_at=STATED,
        )
    return task


def labels(answer: dict[str, Any]) -> list[str]:
    return [item["label"] for item in answer["commitments"]]


def open_labels(api: Api, persona: Persona, **body: Any) -> list[str]:
    return labels(ok(api.post("/commitments/open", persona, body)))


def listed_labels(api: Api, persona: Persona, **body: Any) -> list[str]:
    return labels(ok(api.post("/commitments/list", persona, body)))


def active_statuses(task: Node) -> list[tuple[Any, str]]:
    claims = Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS", status="active")
    return list(claims.values_list("object_value", "origin"))


def status_event(claim: Claim) -> MemoryEvent:
    """The audit record of the status change that wrote `claim`."""
    return MemoryEvent.objects.get(action="task.status", target_id=claim.subject_id, after__claimId=claim.pk)


def status_event_count(task: Node) -> int:
    return MemoryEvent.objects.filter(action="task.status", target_id=task.pk).count()


# What is open --------------------------------------------------------------------------------------


def test_a_task_said_in_a_conversation_is_open_until_it_is_done(api: Api, owner: Persona, alice: User) -> None:
    # Marcel's promise, so Marcel owns it (a recipient of the owner's own task would not, issue 13).
    say(api, owner, "Marcel will send the spec by Friday.")
    task = Node.objects.get(owner=alice, type="Task")
    marcel = Node.objects.get(owner=alice, type="Person", label="Marcel")
    status = Claim.objects.get(subject=task, predicate="HAS_TASK_STATUS")
    message = Source.objects.get(owner=alice, kind="message")
    assert ok(api.post("/commitments/open", owner, {})) == {
        "commitments": [
            {
                "taskId": task.pk,
                "label": "Send the spec",
                "status": "pending",
                "owner": {"nodeId": marcel.pk, "label": "Marcel"},
                "dueOn": "2026-04-24",
                "statedAt": "2026-04-22T10:00:00Z",
                "sourceId": message.pk,
                "provenance": "trusted",
                "origin": "user_stated",
                "statusClaimId": status.pk,
                "partitionKey": "memory:personal",
            }
        ]
    }

    say(api, owner, "Marcel sent the spec.", conversation="later")
    assert ok(api.post("/commitments/open", owner, {})) == {"commitments": []}
    assert active_statuses(task) == [("completed", "user_stated")]
    # Old hits still speak of the task and its deadline; that does not make it open again.
    search = ok(api.post("/query/search", owner, {"query": "spec"}))
    assert sorted(result["text"] for result in search["searchResults"]) == [
        "Send the spec: completed",
        "Send the spec: due 2026-04-24",
        "Send the spec: owned by Marcel",
        "Task: Send the spec (completed)",
    ]
    assert ok(api.post("/commitments/open", owner, {})) == {"commitments": []}
    assert listed_labels(api, owner, status=["completed"]) == ["Send the spec"]


def test_the_owners_own_task_links_the_person_it_names(api: Api, owner: Persona, alice: User) -> None:
    # The README's first example: the user owns the task (owner null); Marcel, its recipient, is a linked person.
    say(api, owner, "I'll send the spec to Marcel by Friday.")
    task = Node.objects.get(owner=alice, type="Task")
    marcel = Node.objects.get(owner=alice, type="Person", label="Marcel")
    [commitment] = ok(api.post("/commitments/open", owner, {}))["commitments"]
    assert (commitment["label"], commitment["owner"], commitment["dueOn"]) == (
        "Send the spec to Marcel", None, "2026-04-24",
    )  # fmt: skip
    mention = Claim.objects.get(subject=task, predicate="MENTIONS")
    assert (mention.object_node, mention.status, mention.origin) == (marcel, "active", "user_stated")
    assert not Claim.objects.filter(subject=task, predicate="OWNED_BY").exists()
    neighborhood = ok(api.post("/node/neighborhood", owner, {"nodeId": marcel.pk}))
    assert [n["label"] for n in neighborhood["neighbors"]] == ["Send the spec to Marcel"]


def test_the_formatted_result_lists_the_open_tasks(api: Api, owner: Persona, alice: User) -> None:
    marcel = NodeFactory.create(owner=alice, type="Person", label="Marcel")
    task = make_task(alice, "Send the spec", due="2026-04-24", owned_by=marcel)
    make_task(alice, "Book the flights", status="completed")
    formatted = ok(api.post("/commitments/open", owner, {"includeFormattedResult": True}))["formattedResult"]
    assert f'<commitment task_id="{task.pk}" status="pending" owner="Marcel" due_on="2026-04-24"' in formatted
    assert "Book the flights" not in formatted
    assert "formattedResult" not in ok(api.post("/commitments/open", owner, {}))


def test_completed_abandoned_and_dismissed_tasks_leave_open_work(api: Api, owner: Persona, alice: User) -> None:
    done, dropped, dismissed, _ = (
        make_task(alice, label)
        for label in ("Book the flights", "Call the bank", "Pay the invoice", "Write the report")
    )
    # Undated tasks tie on the due date; their order is by id, which two tasks made in one millisecond may not keep.
    assert sorted(open_labels(api, owner)) == [
        "Book the flights",
        "Call the bank",
        "Pay the invoice",
        "Write the report",
    ]

    ok(api.post("/commitments/set-status", owner, {"taskId": done.pk, "status": "completed"}))
    ok(api.post("/commitments/set-status", owner, {"taskId": dropped.pk, "status": "abandoned"}))
    assert ok(api.post("/commitments/dismiss", owner, {"taskId": dismissed.pk})) == {
        "taskId": dismissed.pk,
        "dismissed": True,
    }

    assert open_labels(api, owner) == ["Write the report"]
    assert listed_labels(api, owner) == ["Write the report"]
    assert listed_labels(api, owner, status=["completed"]) == ["Book the flights"]
    assert listed_labels(api, owner, status=["abandoned"]) == ["Call the bank"]
    assert sorted(listed_labels(api, owner, status=["completed", "abandoned"])) == ["Book the flights", "Call the bank"]
    everything = ["Book the flights", "Call the bank", "Write the report"]
    assert sorted(listed_labels(api, owner, status=[])) == everything
    assert sorted(listed_labels(api, owner, status=["pending", "in_progress", "completed", "abandoned"])) == everything
    assert active_statuses(dismissed) == []
    assert Claim.objects.get(subject=dismissed, predicate="HAS_TASK_STATUS").status == "retracted"


def test_dismissing_twice_is_harmless_and_set_status_brings_a_task_back(api: Api, owner: Persona, alice: User) -> None:
    task = make_task(alice, "Pay the invoice")
    ok(api.post("/commitments/dismiss", owner, {"taskId": task.pk}))
    assert ok(api.post("/commitments/dismiss", owner, {"taskId": task.pk})) == {"taskId": task.pk, "dismissed": True}
    assert MemoryEvent.objects.filter(action="task.dismiss", target_id=task.pk).count() == 1
    assert open_labels(api, owner) == []
    ok(api.post("/commitments/set-status", owner, {"taskId": task.pk, "status": "in_progress"}))
    assert open_labels(api, owner) == ["Pay the invoice"]
    assert active_statuses(task) == [("in_progress", "manual")]


# Filters -------------------------------------------------------------------------------------------


def test_owned_by_keeps_the_tasks_of_one_owner_and_the_users_own_tasks_show_no_owner(
    api: Api, owner: Persona, alice: User
) -> None:
    me = self_node(alice, personal(alice))
    marcel = NodeFactory.create(owner=alice, type="Person", label="Marcel")
    anna = NodeFactory.create(owner=alice, type="Person", label="Anna")
    make_task(alice, "Send the spec", owned_by=marcel)
    make_task(alice, "Review the budget", owned_by=anna)
    make_task(alice, "Renew my passport", owned_by=me)
    make_task(alice, "Water the plants")

    everything = ok(api.post("/commitments/open", owner, {}))["commitments"]
    assert {item["label"]: item["owner"] for item in everything} == {
        "Send the spec": {"nodeId": marcel.pk, "label": "Marcel"},
        "Review the budget": {"nodeId": anna.pk, "label": "Anna"},
        "Renew my passport": None,
        "Water the plants": None,
    }
    assert open_labels(api, owner, ownedBy=marcel.pk) == ["Send the spec"]
    assert open_labels(api, owner, ownedBy=anna.pk) == ["Review the budget"]
    mine = ok(api.post("/commitments/open", owner, {"ownedBy": me.pk}))["commitments"]
    assert [(item["label"], item["owner"]) for item in mine] == [("Renew my passport", None)]
    assert listed_labels(api, owner, ownedBy=me.pk) == ["Renew my passport"]
    assert open_labels(api, owner, ownedBy=MISSING_TASK) == []


def test_due_before_is_inclusive_and_leaves_out_undated_tasks(api: Api, owner: Persona, alice: User) -> None:
    make_task(alice, "Write the report")
    make_task(alice, "Pay the invoice", due="2026-04-25")
    make_task(alice, "Send the spec", due="2026-04-24")
    make_task(alice, "Book the flights", due="2026-04-20")

    # Soonest due first, undated last.
    assert open_labels(api, owner) == ["Book the flights", "Send the spec", "Pay the invoice", "Write the report"]
    assert open_labels(api, owner, dueBefore="2026-04-24") == ["Book the flights", "Send the spec"]
    assert open_labels(api, owner, dueBefore="2026-04-23") == ["Book the flights"]
    assert open_labels(api, owner, dueBefore="2026-04-19") == []
    assert open_labels(api, owner, dueBefore="2099-01-01") == ["Book the flights", "Send the spec", "Pay the invoice"]
    assert listed_labels(api, owner, dueBefore="2026-04-24") == ["Book the flights", "Send the spec"]


def test_filters_combine(api: Api, owner: Persona, alice: User) -> None:
    marcel = NodeFactory.create(owner=alice, type="Person", label="Marcel")
    make_task(alice, "Send the spec", due="2026-04-24", owned_by=marcel)
    make_task(alice, "Send the invoice", due="2026-04-30", owned_by=marcel)
    make_task(alice, "Send the slides", due="2026-04-20")
    assert open_labels(api, owner, ownedBy=marcel.pk, dueBefore="2026-04-24") == ["Send the spec"]


# Provenance ----------------------------------------------------------------------------------------


def test_a_candidate_is_not_open_work_until_it_is_confirmed(api: Api, owner: Persona, alice: User) -> None:
    task, candidate = task_create(owner=alice, partition=personal(alice), label="Renew passport", actor=Actor.system())
    assert open_labels(api, owner) == []
    listed = ok(api.post("/commitments/list", owner, {"provenance": "candidate"}))["commitments"]
    assert [(item["taskId"], item["provenance"], item["origin"], item["status"]) for item in listed] == [
        (task.pk, "candidate", "assistant_inferred", "pending")
    ]
    assert listed[0]["statusClaimId"] == candidate.pk
    assert listed[0]["sourceId"] is None
    assert listed_labels(api, owner) == ["Renew passport"]  # provenance defaults to all
    assert listed_labels(api, owner, provenance="all") == ["Renew passport"]
    assert listed_labels(api, owner, provenance="trusted") == []

    confirmed = ok(api.post("/commitments/confirm", owner, {"taskId": task.pk}))
    trusted = Claim.objects.get(subject=task, predicate="HAS_TASK_STATUS", status="active")
    assert confirmed == {"taskId": task.pk, "status": "pending", "provenance": "trusted", "statusClaimId": trusted.pk}
    assert trusted.pk != candidate.pk
    assert trusted.derived_from_id == candidate.pk
    assert open_labels(api, owner) == ["Renew passport"]
    assert listed_labels(api, owner, provenance="candidate") == []
    event = status_event(trusted)
    assert (event.before, event.after) == (
        {"status": "pending"},
        {"status": "pending", "origin": "manual", "claimId": trusted.pk, "quarantined": False},
    )
    assert (event.actor_kind, event.actor_token_id) == ("token", owner.token.pk if owner.token else None)


def test_confirming_trusted_work_changes_nothing(api: Api, owner: Persona, alice: User) -> None:
    task = make_task(alice, "Send the spec", status="in_progress")
    current = Claim.objects.get(subject=task, predicate="HAS_TASK_STATUS", status="active")
    events = status_event_count(task)
    confirmed = ok(api.post("/commitments/confirm", owner, {"taskId": task.pk}))
    assert confirmed == {
        "taskId": task.pk,
        "status": "in_progress",
        "provenance": "trusted",
        "statusClaimId": current.pk,
    }
    assert status_event_count(task) == events


@pytest.mark.parametrize("origin", ["assistant_inferred", "imported", "system_default"])
def test_every_candidate_origin_is_in_the_candidate_band(api: Api, owner: Persona, alice: User, origin: str) -> None:
    make_task(alice, "Renew passport", origin=origin)
    assert open_labels(api, owner) == []
    assert listed_labels(api, owner, provenance="candidate") == ["Renew passport"]


def test_confirming_a_dismissed_task_is_a_conflict(api: Api, owner: Persona, alice: User) -> None:
    task, _ = task_create(owner=alice, partition=personal(alice), label="Renew passport", actor=Actor.system())
    ok(api.post("/commitments/dismiss", owner, {"taskId": task.pk}))
    response = api.post("/commitments/confirm", owner, {"taskId": task.pk})
    assert refused(response) == (409, "CONFLICT")
    assert response.json()["error"]["details"] == {"taskId": task.pk}
    assert active_statuses(task) == []
    assert listed_labels(api, owner, status=[]) == []


# Set status ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "still_open"),
    [("completed", False), ("abandoned", False), ("in_progress", True), ("pending", True)],
)
def test_set_status_makes_it_the_current_trusted_status(
    api: Api, owner: Persona, alice: User, status: str, still_open: bool
) -> None:
    task, candidate = task_create(owner=alice, partition=personal(alice), label="Renew passport", actor=Actor.system())
    answer = ok(api.post("/commitments/set-status", owner, {"taskId": task.pk, "status": status}))
    current = Claim.objects.get(subject=task, predicate="HAS_TASK_STATUS", status="active")
    assert answer == {"taskId": task.pk, "status": status, "provenance": "trusted", "statusClaimId": current.pk}
    assert active_statuses(task) == [(status, "manual")]
    candidate.refresh_from_db()
    assert (candidate.status, candidate.superseded_by_id) == ("superseded", current.pk)
    event = status_event(current)
    assert (event.before, event.after) == (
        {"status": "pending"},
        {"status": status, "origin": "manual", "claimId": current.pk, "quarantined": False},
    )
    assert open_labels(api, owner) == (["Renew passport"] if still_open else [])
    assert listed_labels(api, owner, status=[status]) == ["Renew passport"]


def test_an_unknown_status_is_refused_and_changes_nothing(api: Api, owner: Persona, alice: User) -> None:
    task = make_task(alice, "Send the spec")
    response = api.post("/commitments/set-status", owner, {"taskId": task.pk, "status": "done"})
    assert refused(response) == (400, "VALIDATION_ERROR")
    assert list(response.json()["error"]["details"]) == ["status"]
    assert active_statuses(task) == [("pending", "user_stated")]


def test_a_node_that_is_not_a_task_is_not_found(api: Api, owner: Persona, alice: User) -> None:
    marcel = NodeFactory.create(owner=alice, type="Person", label="Marcel")
    for path, body in [
        ("/commitments/set-status", {"taskId": marcel.pk, "status": "completed"}),
        ("/commitments/confirm", {"taskId": marcel.pk}),
        ("/commitments/dismiss", {"taskId": marcel.pk}),
    ]:
        response = api.post(path, owner, body)
        assert refused(response) == (404, "NOT_FOUND"), path
        assert response.json()["error"]["details"] == {"taskId": marcel.pk}, path
    assert Claim.objects.filter(subject=marcel).count() == 0


def test_an_unknown_task_id_is_not_found(api: Api, owner: Persona) -> None:
    for path, body in ENDPOINTS.items():
        if path in WRITES:
            assert refused(api.post(path, owner, body)) == (404, "NOT_FOUND"), path


# Recovery of statusless tasks ----------------------------------------------------------------------


@pytest.fixture
def statusless(alice: User) -> list[Node]:
    """Two tasks written past the service (no status at all), one dismissed task and one ordinary task."""
    lost = [NodeFactory.create(owner=alice, type="Task", label=label) for label in ("Fix the gate", "Call Anna")]
    dismissed, _ = task_create(owner=alice, partition=personal(alice), label="Buy a boat", actor=Actor.system())
    Claim.objects.filter(subject=dismissed, predicate="HAS_TASK_STATUS").update(status="retracted")
    make_task(alice, "Send the spec")
    return sorted(lost, key=lambda task: task.pk)


def status_claims() -> int:
    return Claim.objects.filter(predicate="HAS_TASK_STATUS").count()


def test_a_dry_run_counts_statusless_tasks_and_writes_nothing(api: Api, owner: Persona, statusless: list[Node]) -> None:
    before = status_claims()
    for body in ({}, {"dryRun": True}):
        assert ok(api.post("/maintenance/recover-statusless-commitments", owner, body)) == {
            "dryRun": True,
            "found": 2,
            "recovered": 0,
            "sample": [{"taskId": task.pk, "label": task.label} for task in statusless],
        }
    assert status_claims() == before
    assert listed_labels(api, owner, status=[]) == ["Send the spec"]


def test_applying_the_recovery_needs_the_maintenance_scope(api: Api, alice: User, statusless: list[Node]) -> None:
    writer = issue(alice, "writer", scopes=["read", "write", "edit"])
    before = status_claims()
    response = api.post("/maintenance/recover-statusless-commitments", writer, {"dryRun": False})
    assert refused(response) == (403, "SCOPE_REQUIRED")
    assert response.json()["error"]["details"] == {"requiredScope": "maintenance"}
    assert status_claims() == before
    assert ok(api.post("/maintenance/recover-statusless-commitments", writer, {}))["found"] == 2


def test_recovery_gives_candidate_pending_once_and_leaves_dismissed_tasks_alone(
    api: Api, owner: Persona, alice: User, statusless: list[Node]
) -> None:
    applied = ok(api.post("/maintenance/recover-statusless-commitments", owner, {"dryRun": False}))
    assert applied == {
        "dryRun": False,
        "found": 2,
        "recovered": 2,
        "sample": [{"taskId": task.pk, "label": task.label} for task in statusless],
    }
    for task in statusless:
        assert active_statuses(task) == [("pending", "assistant_inferred")]
    assert sorted(listed_labels(api, owner, provenance="candidate")) == ["Call Anna", "Fix the gate"]
    assert open_labels(api, owner) == ["Send the spec"]
    boat = Node.objects.get(owner=alice, label="Buy a boat")
    assert active_statuses(boat) == []

    again = ok(api.post("/maintenance/recover-statusless-commitments", owner, {"dryRun": False}))
    assert again == {"dryRun": False, "found": 0, "recovered": 0, "sample": []}
    assert Claim.objects.filter(subject__in=statusless, predicate="HAS_TASK_STATUS").count() == 2


def test_a_dismissed_statusless_task_stays_dismissed_after_recovery(api: Api, owner: Persona, alice: User) -> None:
    task = NodeFactory.create(owner=alice, type="Task", label="Fix the gate")
    assert ok(api.post("/commitments/dismiss", owner, {"taskId": task.pk})) == {"taskId": task.pk, "dismissed": True}
    recovered = ok(api.post("/maintenance/recover-statusless-commitments", owner, {"dryRun": False}))
    assert (recovered["found"], recovered["recovered"]) == (0, 0)
    assert listed_labels(api, owner, status=[]) == []


def test_cleanup_runs_the_recovery_unless_told_not_to(
    api: Api, owner: Persona, alice: User, statusless: list[Node]
) -> None:
    sample = [{"taskId": task.pk, "label": task.label} for task in statusless]
    # /cleanup also prunes orphans and sweeps duplicates now (maintenance/cleanup.py); statusless tasks are
    # never orphans (recovery is what they need), so here those steps find nothing.
    nothing_else = {
        "pruneOrphanNodes": {"dryRun": True, "candidateCount": 0, "nodes": []},
        "dedupSweep": {"dryRun": True, "groupCount": 0, "merged": 0, "groups": []},
    }
    assert ok(api.post("/cleanup", owner, {})) == {
        "dryRun": True,
        "recoverStatuslessCommitments": {"dryRun": True, "found": 2, "recovered": 0, "sample": sample},
        **nothing_else,
    }
    assert ok(api.post("/cleanup", owner, {"recoverStatuslessCommitments": False})) == {"dryRun": True, **nothing_else}

    skipped = ok(api.post("/cleanup", owner, {"dryRun": False, "recoverStatuslessCommitments": False}))
    assert sorted(skipped) == ["dedupSweep", "dryRun", "lifecycle", "pruneOrphanNodes"]
    assert [active_statuses(task) for task in statusless] == [[], []]

    applied = ok(api.post("/cleanup", owner, {"dryRun": False}))
    assert applied["recoverStatuslessCommitments"] == {"dryRun": False, "found": 2, "recovered": 2, "sample": sample}
    assert [active_statuses(task) for task in statusless] == [[("pending", "assistant_inferred")]] * 2

    writer = issue(alice, "writer", scopes=["read", "write"])
    response = api.post("/cleanup", writer, {"dryRun": False})
    assert refused(response) == (403, "SCOPE_REQUIRED")
    assert response.json()["error"]["details"] == {"requiredScope": "maintenance"}


# Digest --------------------------------------------------------------------------------------------


def digest(api: Api, persona: Persona, date: str, zone: str, **options: Any) -> dict[str, Any]:
    answer = ok(api.post("/digest", persona, {"date": date, "timeZone": zone, **options}))
    assert (answer["date"], answer["timeZone"]) == (date, zone)
    buckets = {name: [item["label"] for item in items] for name, items in answer["commitments"].items()}
    return {**buckets, "since": answer["since"]}


@pytest.fixture
def around_dst(alice: User) -> None:
    """Open tasks around 2026-03-29, the day Europe/Amsterdam moves its clocks to summer time."""
    make_task(alice, "Water the plants", due="2026-03-28")
    make_task(alice, "Call the bank", due="2026-03-29")
    make_task(alice, "Send the spec", due="2026-03-30", status="in_progress")
    make_task(alice, "Book the flights", due="2026-04-03")
    make_task(alice, "Pay the invoice", due="2026-04-05")
    make_task(alice, "Renew passport", due="2026-04-10")
    make_task(alice, "Write the report")
    make_task(alice, "Read the contract", due="2026-03-29", origin="assistant_inferred")  # a candidate
    make_task(alice, "Fix the gate", due="2026-03-29", status="completed")


def test_the_digest_buckets_open_tasks_around_a_dst_change(api: Api, owner: Persona, around_dst: None) -> None:
    assert digest(api, owner, "2026-03-29", "Europe/Amsterdam") == {
        "overdue": ["Water the plants"],
        "dueToday": ["Call the bank"],
        "upcoming": ["Send the spec", "Book the flights", "Pay the invoice"],  # 2026-04-05 is the 7th day
        "since": "2026-03-29T00:00:00+01:00",
    }
    assert digest(api, owner, "2026-03-30", "Europe/Amsterdam") == {
        "overdue": ["Water the plants", "Call the bank"],
        "dueToday": ["Send the spec"],
        "upcoming": ["Book the flights", "Pay the invoice"],
        "since": "2026-03-30T00:00:00+02:00",
    }
    assert digest(api, owner, "2026-03-29", "Europe/Amsterdam", upcomingWithinDays=0)["upcoming"] == []
    assert digest(api, owner, "2026-03-29", "Europe/Amsterdam", upcomingWithinDays=12)["upcoming"] == [
        "Send the spec",
        "Book the flights",
        "Pay the invoice",
        "Renew passport",
    ]


@pytest.mark.parametrize(
    ("zone", "since"),
    [
        ("UTC", "2026-03-29T00:00:00Z"),
        ("America/New_York", "2026-03-29T00:00:00-04:00"),
        ("Pacific/Auckland", "2026-03-29T00:00:00+13:00"),
        ("Asia/Kolkata", "2026-03-29T00:00:00+05:30"),
    ],
)
def test_the_digest_buckets_by_the_calendar_date_in_every_time_zone(
    api: Api, owner: Persona, around_dst: None, zone: str, since: str
) -> None:
    assert digest(api, owner, "2026-03-29", zone) == {
        "overdue": ["Water the plants"],
        "dueToday": ["Call the bank"],
        "upcoming": ["Send the spec", "Book the flights", "Pay the invoice"],
        "since": since,
    }


# Personas ------------------------------------------------------------------------------------------


@pytest.fixture
def alices_tasks(alice: User) -> dict[str, Node]:
    """Alice's open, candidate, completed and statusless tasks."""
    return {
        "open": make_task(alice, "Send the spec", due=DAY),
        "candidate": make_task(alice, "Renew passport", due="2026-04-23", origin="assistant_inferred"),
        "completed": make_task(alice, "Book the flights", status="completed"),
        "statusless": NodeFactory.create(owner=alice, type="Task", label="Fix the gate"),
    }


def test_another_user_sees_none_of_alices_tasks(
    api: Api, other: Persona, bob: User, alices_tasks: dict[str, Node]
) -> None:
    make_task(bob, "Mow the lawn", due=DAY)
    assert open_labels(api, other) == ["Mow the lawn"]
    assert listed_labels(api, other, provenance="all", status=[]) == ["Mow the lawn"]
    assert digest(api, other, DAY, "UTC") == {
        "overdue": [],
        "dueToday": ["Mow the lawn"],
        "upcoming": [],
        "since": "2026-04-22T00:00:00Z",
    }
    empty = {"dryRun": True, "found": 0, "recovered": 0, "sample": []}
    assert ok(api.post("/maintenance/recover-statusless-commitments", other, {})) == empty
    assert ok(api.post("/cleanup", other, {}))["recoverStatuslessCommitments"] == empty
    applied = ok(api.post("/maintenance/recover-statusless-commitments", other, {"dryRun": False}))
    assert (applied["found"], applied["recovered"]) == (0, 0)
    assert active_statuses(alices_tasks["statusless"]) == []


def test_another_user_cannot_change_alices_tasks(api: Api, other: Persona, alices_tasks: dict[str, Node]) -> None:
    before = {name: active_statuses(task) for name, task in alices_tasks.items()}
    for task in alices_tasks.values():
        for path, body in [
            ("/commitments/confirm", {"taskId": task.pk}),
            ("/commitments/dismiss", {"taskId": task.pk}),
            ("/commitments/set-status", {"taskId": task.pk, "status": "abandoned"}),
        ]:
            response = api.post(path, other, body)
            assert refused(response) == (404, "NOT_FOUND"), (path, task.label)
            assert list(response.json()["error"]["details"].values()) == [task.pk]
    assert {name: active_statuses(task) for name, task in alices_tasks.items()} == before


def test_a_task_id_out_of_reach_is_reported_under_the_field_that_was_sent(api: Api, owner: Persona) -> None:
    response = api.post("/commitments/set-status", owner, {"taskId": MISSING_TASK, "status": "completed"})
    assert refused(response) == (404, "NOT_FOUND")
    assert response.json()["error"]["details"] == {"taskId": MISSING_TASK}


def test_a_chat_host_decides_on_the_tasks_of_the_user_it_names(
    api: Api, host: Persona, alice: User, alices_tasks: dict[str, Node]
) -> None:
    task = alices_tasks["candidate"]
    assert open_labels(api, host, userId=alice.external_id) == ["Send the spec"]
    body = {"userId": alice.external_id, "taskId": task.pk}
    assert ok(api.post("/commitments/confirm", host, body))["provenance"] == "trusted"
    assert open_labels(api, host, userId=alice.external_id) == ["Send the spec", "Renew passport"]
    assert refused(api.post("/commitments/open", host, {})) == (400, "VALIDATION_ERROR")
    assert refused(api.post("/commitments/dismiss", host, {**body, "userId": "bob"})) == (404, "NOT_FOUND")
    assert active_statuses(task) == [("pending", "manual")]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_unknown_revoked_and_missing_tokens_get_401(
    api: Api, outsider: Persona, revoked: Persona, alices_tasks: dict[str, Node], path: str
) -> None:
    body = dict(ENDPOINTS[path])
    if "taskId" in body:
        body["taskId"] = alices_tasks["open"].pk
    for persona, code in [(outsider, "TOKEN_INVALID"), (revoked, "TOKEN_REVOKED"), (None, "AUTH_REQUIRED")]:
        assert refused(api.post(path, persona, body)) == (401, code), persona
    assert active_statuses(alices_tasks["open"]) == [("pending", "user_stated")]


def test_a_read_only_token_reads_commitments_but_cannot_decide_on_them(
    api: Api, alice: User, alices_tasks: dict[str, Node]
) -> None:
    reader = issue(alice, "reader", scopes=["read"])
    assert open_labels(api, reader) == ["Send the spec"]
    assert listed_labels(api, reader) == ["Send the spec", "Renew passport"]
    assert digest(api, reader, DAY, "UTC")["dueToday"] == ["Send the spec"]
    assert ok(api.post("/maintenance/recover-statusless-commitments", reader, {}))["found"] == 1
    task = alices_tasks["candidate"]
    for path, body in [
        ("/commitments/confirm", {"taskId": task.pk}),
        ("/commitments/dismiss", {"taskId": task.pk}),
        ("/commitments/set-status", {"taskId": task.pk, "status": "completed"}),
    ]:
        response = api.post(path, reader, body)
        assert refused(response) == (403, "SCOPE_REQUIRED"), path
        assert response.json()["error"]["details"] == {"requiredScope": "write"}, path
    assert active_statuses(task) == [("pending", "assistant_inferred")]
    for path in ("/maintenance/recover-statusless-commitments", "/cleanup"):
        response = api.post(path, reader, {"dryRun": False})
        assert refused(response) == (403, "SCOPE_REQUIRED"), path
    assert active_statuses(alices_tasks["statusless"]) == []


def test_a_token_limited_to_one_partition_sees_and_changes_only_its_tasks(
    api: Api, owner: Persona, alice: User, alices_tasks: dict[str, Node]
) -> None:
    apollo = PartitionFactory.create(owner=alice, key="project:apollo")
    rocket, _ = task_create(
        owner=alice,
        partition=apollo,
        label="Test the rocket",
        actor=Actor.system(),
        status="pending",
        origin="user_stated",
    )
    limited = issue(
        alice,
        "apollo",
        scopes=["read", "write"],
        partition_keys=["project:apollo"],
        default_partition_key="project:apollo",
    )
    assert open_labels(api, limited) == ["Test the rocket"]
    assert [item["partitionKey"] for item in ok(api.post("/commitments/open", limited, {}))["commitments"]] == [
        "project:apollo"
    ]
    assert open_labels(api, owner) == ["Send the spec"]  # strict: the personal partition only
    spec = alices_tasks["open"]
    response = api.post("/commitments/set-status", limited, {"taskId": spec.pk, "status": "completed"})
    assert refused(response) == (404, "NOT_FOUND")
    assert active_statuses(spec) == [("pending", "user_stated")]
    ok(api.post("/commitments/set-status", limited, {"taskId": rocket.pk, "status": "completed"}))
    assert active_statuses(rocket) == [("completed", "manual")]


# Malformed input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/commitments/confirm", {}, "taskId"),
        ("/commitments/dismiss", {}, "taskId"),
        ("/commitments/set-status", {"status": "completed"}, "taskId"),
        ("/commitments/set-status", {"taskId": MISSING_TASK}, "status"),
        ("/commitments/set-status", {"taskId": MISSING_TASK, "status": "dismissed"}, "status"),
        ("/commitments/confirm", {"taskId": MISSING_TASK, "status": "completed"}, "status"),
        ("/commitments/dismiss", {"taskId": MISSING_TASK, "reason": "spam"}, "reason"),
        ("/commitments/open", {"colour": "red"}, "colour"),
        ("/commitments/open", {"dueBefore": "next friday"}, "dueBefore"),
        ("/commitments/open", {"dueBefore": "2026-02-30"}, "dueBefore"),
        ("/commitments/open", {"ownedBy": "node_" + "x" * 40}, "ownedBy"),
        ("/commitments/open", {"provenance": "candidate"}, "provenance"),
        ("/commitments/open", {"status": ["completed"]}, "status"),
        ("/commitments/list", {"provenance": "maybe"}, "provenance"),
        ("/commitments/list", {"dueBefore": "24-04-2026"}, "dueBefore"),
        ("/commitments/list", {"status": ["done"]}, "status"),
        ("/commitments/list", {"status": "pending"}, "status"),
        ("/commitments/list", {"status": ["pending"] * 5}, "status"),
        ("/maintenance/recover-statusless-commitments", {"dryRun": "perhaps"}, "dryRun"),
        ("/maintenance/recover-statusless-commitments", {"apply": True}, "apply"),
        ("/cleanup", {"recoverStatuslessCommitments": "nope"}, "recoverStatuslessCommitments"),
    ],
)
def test_malformed_input_is_a_validation_error_naming_the_field(
    api: Api, owner: Persona, path: str, body: dict[str, Any], field: str
) -> None:
    response = api.post(path, owner, body)
    assert refused(response) == (400, "VALIDATION_ERROR")
    assert list(response.json()["error"]["details"]) == [field]


# Selector cost and concurrency ---------------------------------------------------------------------


def test_open_commitments_costs_the_same_queries_for_many_tasks(alice: User, django_assert_num_queries: Any) -> None:
    access = access_for_user(user=alice)
    marcel = NodeFactory.create(owner=alice, type="Person", label="Marcel")
    make_task(alice, "Send the spec", due=DAY, owned_by=marcel)
    with django_assert_num_queries(3):
        assert [item.owner for item in open_commitments(access)] == [marcel]
    for n in range(5):
        make_task(alice, f"Task {n}", due=f"2026-05-0{n + 1}", owned_by=marcel)
    with django_assert_num_queries(3):
        found = open_commitments(access)
        assert [(item.source_id, item.owner) for item in found] == [(None, marcel)] * 6


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_set_status_calls_leave_one_active_status(alice: User) -> None:
    task = make_task(alice, "Send the spec")
    access = access_for_user(user=alice)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def decide(status: str) -> None:
        try:
            barrier.wait()
            commitment_set_status(access, task.pk, status)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(status,)) for status in ("completed", "abandoned")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    (current,) = active_statuses(task)
    assert current in [("completed", "manual"), ("abandoned", "manual")]
    history = Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS")
    assert sorted(history.values_list("status", flat=True)) == ["active", "superseded", "superseded"]


def test_cleanup_sweeps_only_the_partitions_the_token_may_reach(api: Api, alice: User) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from memory.models import Partition
    from tests.factories import ClaimFactory, PartitionFactory

    apollo = PartitionFactory.create(owner=alice, key="project:apollo")
    past = timezone.now() - timedelta(days=1)
    mine = ClaimFactory.create(owner=alice, partition=Partition.objects.get(owner=alice, key="memory:personal"),
                               statement="Meeting on Monday.", expires_at=past)  # fmt: skip
    theirs = ClaimFactory.create(owner=alice, partition=apollo, statement="Launch on Monday.", expires_at=past)
    limited = issue(alice, "apollo", scopes=["read", "write", "maintenance"], partition_keys=["project:apollo"],
                    default_partition_key="project:apollo")  # fmt: skip
    applied = ok(api.post("/cleanup", limited, {"dryRun": False}))
    assert applied["lifecycle"]["expired"] == 1
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.status, theirs.status) == ("active", "expired")

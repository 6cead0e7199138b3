"""/cleanup: statusless recovery → orphan prune → dedup sweep (+ the lifecycle sweep on apply), idempotent."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Claim, MemoryEvent, Node, User
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import ClaimFactory, NodeFactory
from tests.maintenance.test_orphans_and_dedup import named

pytestmark = pytest.mark.django_db


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    return dict(response.json())


def snapshot(user: User) -> tuple[Any, ...]:
    nodes = sorted(Node.objects.filter(owner=user).values_list("pk", "label", "merged_into_id"))
    claims = sorted(Claim.objects.filter(owner=user).values_list("pk", "status", "subject_id", "object_node_id"))
    return nodes, claims, MemoryEvent.objects.filter(owner=user).count()


def test_cleanup_recovers_then_prunes_orphans_then_merges_duplicates_once(
    api: Api, owner: Persona, alice: User
) -> None:
    statusless = NodeFactory.create(owner=alice, type="Task", label="Fix the gate")
    # An orphan with the same name as a node with claims: pruned as an orphan, so there is nothing to merge.
    orphan = named(alice, "Anna de Vries")
    anna = named(alice, "Anna de Vries")
    ClaimFactory.create(owner=alice, subject=anna, statement="Anna de Vries lives in Delft.")
    # Two duplicates with claims: merged into the older.
    bram, bram_again = named(alice, "Bram"), named(alice, "bram")
    for node in (bram, bram_again):
        ClaimFactory.create(owner=alice, subject=node, statement=f"{node.label} sails.")
    before = snapshot(alice)

    dry = ok(api.post("/cleanup", owner, {}))
    assert list(dry) == ["dryRun", "recoverStatuslessCommitments", "pruneOrphanNodes", "dedupSweep"]
    assert dry["recoverStatuslessCommitments"]["found"] == 1
    assert dry["pruneOrphanNodes"]["candidateCount"] == 1
    assert [group["targetNodeId"] for group in dry["dedupSweep"]["groups"]] == [orphan.pk, bram.pk]
    assert snapshot(alice) == before  # a dry run writes nothing

    applied = ok(api.post("/cleanup", owner, {"dryRun": False}))
    assert list(applied) == ["dryRun", "recoverStatuslessCommitments", "pruneOrphanNodes", "dedupSweep", "lifecycle"]
    assert applied["recoverStatuslessCommitments"]["recovered"] == 1
    assert (applied["pruneOrphanNodes"]["deletedCount"], applied["pruneOrphanNodes"]["nodes"][0]["nodeId"]) == (
        1, orphan.pk
    )  # fmt: skip
    assert [group["targetNodeId"] for group in applied["dedupSweep"]["groups"]] == [bram.pk]
    assert applied["dedupSweep"]["merged"] == 1
    assert not Node.objects.filter(pk=orphan.pk).exists()
    assert Node.objects.get(pk=anna.pk).merged_into_id is None
    assert Node.objects.get(pk=bram_again.pk).merged_into_id == bram.pk
    assert Claim.objects.filter(subject=statusless, predicate="HAS_TASK_STATUS", status="active").count() == 1

    after = snapshot(alice)
    again = ok(api.post("/cleanup", owner, {"dryRun": False}))
    assert snapshot(alice) == after  # idempotent: the second apply changes nothing
    counts = (again["recoverStatuslessCommitments"]["found"], again["pruneOrphanNodes"]["deletedCount"],
              again["dedupSweep"]["merged"], again["lifecycle"]["expired"])  # fmt: skip
    assert counts == (0, 0, 0, 0)


def test_each_step_can_be_turned_off(api: Api, owner: Persona, alice: User) -> None:
    orphan = named(alice, "Jorge")
    answer = ok(api.post("/cleanup", owner, {"dryRun": False, "pruneOrphanNodes": False, "dedupSweep": False}))
    assert sorted(answer) == ["dryRun", "lifecycle", "recoverStatuslessCommitments"]
    assert Node.objects.filter(pk=orphan.pk).exists()


def test_cleanup_personas_and_bad_input(
    api: Api, owner: Persona, other: Persona, outsider: Persona, revoked: Persona, alice: User
) -> None:
    orphan = named(alice, "Jorge")
    assert ok(api.post("/cleanup", other, {"dryRun": False}))["pruneOrphanNodes"]["deletedCount"] == 0
    assert error_code(api.post("/cleanup", other, {"userId": "alice"})) == "NOT_FOUND"
    for persona, code in [(None, "AUTH_REQUIRED"), (outsider, "TOKEN_INVALID"), (revoked, "TOKEN_REVOKED")]:
        assert error_code(api.post("/cleanup", persona, {"dryRun": False})) == code
    reader = issue(alice, "reader", scopes=["read", "write", "edit"])
    assert ok(api.post("/cleanup", reader, {}))["pruneOrphanNodes"]["candidateCount"] == 1
    response = api.post("/cleanup", reader, {"dryRun": False})
    assert (response.status_code, error_code(response)) == (403, "SCOPE_REQUIRED")
    for body, field in [({"pruneOrphanNodes": "yes please"}, "pruneOrphanNodes"), ({"dedupSweep": []}, "dedupSweep"),
                        ({"nodeIds": [orphan.pk]}, "nodeIds")]:  # fmt: skip
        response = api.post("/cleanup", owner, body)
        assert error_code(response) == "VALIDATION_ERROR" and field in response.json()["error"]["details"]
    assert Node.objects.filter(pk=orphan.pk).exists()

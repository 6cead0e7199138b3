"""Orphan pruning, the exact-duplicate sweep and /cleanup (recovery → orphans → dedup, idempotent) over REST."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from memory.access import access_for_user
from memory.models import Alias, Claim, MemoryEvent, Node, Partition, User
from memory.names import normalize_name
from memory.services.graph import self_node
from memory.services.nodes import alias_add
from metrics.models import MetricDefinition, Observation
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import ClaimFactory, NodeFactory

pytestmark = pytest.mark.django_db
ORPHANS = "/maintenance/prune-orphan-nodes"
DEDUP = "/cleanup/dedup-sweep"


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    return dict(response.json())


def named(user: User, label: str, type: str = "Person", **fields: Any) -> Node:
    """A node as the pipeline makes one: with its own label as an alias."""
    node = NodeFactory.create(owner=user, label=label, type=type, **fields)
    Alias.objects.create(owner=user, partition=node.partition, node=node, name=label, normalized=normalize_name(label))
    return node


def orphan_world(alice: User) -> dict[str, Node]:
    partition = Partition.objects.get(owner=alice, key="memory:personal")
    nodes = {"orphan": named(alice, "Jorge"), "bare": NodeFactory.create(owner=alice, label="No alias at all")}
    nodes["claimed"] = named(alice, "Anna")
    ClaimFactory.create(owner=alice, subject=nodes["claimed"], statement="Anna lives in Utrecht.")
    nodes["object"] = named(alice, "Utrecht", type="Place")
    ClaimFactory.create(owner=alice, subject=nodes["claimed"], object_node=nodes["object"], statement="Anna in Utrecht",
                        status="superseded")  # fmt: skip
    nodes["taught"] = named(alice, "Marcel")
    alias_add(access=access_for_user(user=alice), node_id=nodes["taught"].pk, name="Marc")
    nodes["task"] = NodeFactory.create(owner=alice, label="Fix the gate", type="Task")
    nodes["self"] = self_node(alice, partition)
    nodes["pointer"] = NodeFactory.create(owner=alice, label="Jorge G.", merged_into=nodes["orphan"])
    nodes["event"] = NodeFactory.create(owner=alice, label="Weight 78 kg on 2026-04-22", type="Event")
    definition = MetricDefinition.objects.create(owner=alice, partition=partition, slug="weight", label="Weight")
    Observation.objects.create(owner=alice, definition=definition, value=78, occurred_at=timezone.now(),
                               event=nodes["event"])  # fmt: skip
    return nodes


def test_orphans_are_nodes_nothing_refers_to(api: Api, owner: Persona, alice: User) -> None:
    nodes = orphan_world(alice)
    found = ok(api.post(ORPHANS, owner, {}))
    expected = sorted([nodes["orphan"].pk, nodes["bare"].pk])
    assert (found["dryRun"], found["candidateCount"], found["nodeIds"], found["hasMore"]) == (True, 2, expected, False)
    assert {item["label"] for item in found["nodes"]} == {"Jorge", "No alias at all"}
    first = ok(api.post(ORPHANS, owner, {"limit": 1}))
    second = ok(api.post(ORPHANS, owner, {"limit": 1, "cursor": first["nextCursor"]}))
    assert (first["hasMore"], second["hasMore"], first["nodeIds"] + second["nodeIds"]) == (True, False, expected)

    # Between preview and apply one orphan gains a claim: it is skipped, the other goes.
    ClaimFactory.create(owner=alice, subject=nodes["bare"], statement="It matters now.")
    applied = ok(api.post(ORPHANS, owner, {"dryRun": False, "nodeIds": found["nodeIds"]}))
    assert applied["deleted"] == [nodes["orphan"].pk]
    assert applied["skipped"] == [
        {"nodeId": nodes["bare"].pk, "reason": "no longer an orphan (it has claims, names or evidence now)"}
    ]
    # The pointer merged into the deleted node goes with it (it would otherwise come back as a live node).
    assert set(Node.objects.filter(owner=alice).values_list("label", flat=True)) == {
        node.label for name, node in nodes.items() if name not in ("orphan", "pointer")
    }
    assert MemoryEvent.objects.get(action="node.prune", target_id=nodes["orphan"].pk).after == {
        "claims": 0, "rule": "orphan"
    }  # fmt: skip
    assert ok(api.post(ORPHANS, owner, {}))["candidateCount"] == 0
    assert ok(api.post(ORPHANS, owner, {"dryRun": False}))["deleted"] == []


def test_orphan_apply_without_ids_takes_every_orphan_and_needs_maintenance(api: Api, alice: User) -> None:
    nodes = orphan_world(alice)
    reader = issue(alice, "reader", scopes=["read", "write", "edit"])
    assert ok(api.post(ORPHANS, reader, {}))["candidateCount"] == 2
    response = api.post(ORPHANS, reader, {"dryRun": False})
    assert (response.status_code, error_code(response)) == (403, "SCOPE_REQUIRED")
    keeper = issue(alice, "keeper", scopes=["read", "maintenance"])
    assert sorted(ok(api.post(ORPHANS, keeper, {"dryRun": False}))["deleted"]) == sorted(
        [nodes["orphan"].pk, nodes["bare"].pk]
    )


def duplicates(alice: User) -> dict[str, Node]:
    first = named(alice, "Anna de Vries")
    later = named(alice, "anna  de vriés")  # the same name, case, accents and spacing aside
    third = named(alice, "Anna de Vries")
    other_type = named(alice, "Anna de Vries", type="Organization")
    tasks = [NodeFactory.create(owner=alice, type="Task", label="Pay the rent") for _ in range(2)]
    ClaimFactory.create(owner=alice, subject=later, statement="Anna de Vries lives in Delft.")
    ClaimFactory.create(owner=alice, subject=third, object_node=first, statement="Anna knows Anna.")
    return {"first": first, "later": later, "third": third, "otherType": other_type, "task": tasks[0]}


def test_dedup_merges_exact_duplicates_into_the_oldest(api: Api, owner: Persona, alice: User) -> None:
    nodes = duplicates(alice)
    preview = ok(api.post(DEDUP, owner, {}))
    assert preview == {
        "dryRun": True,
        "groupCount": 1,
        "merged": 0,
        "groups": [
            {
                "type": "Person", "label": "Anna de Vries", "partitionKey": "memory:personal",
                "targetNodeId": nodes["first"].pk, "sourceNodeIds": [nodes["later"].pk, nodes["third"].pk],
                "claimsMoved": 2,
            }
        ],
    }  # fmt: skip
    assert Node.objects.filter(owner=alice, merged_into__isnull=False).count() == 0
    applied = ok(api.post(DEDUP, owner, {"dryRun": False}))
    assert (applied["merged"], applied["groups"]) == (2, preview["groups"])
    for name in ("later", "third"):
        nodes[name].refresh_from_db()
        assert nodes[name].merged_into_id == nodes["first"].pk
    assert Claim.objects.filter(subject=nodes["first"]).count() == 2
    assert MemoryEvent.objects.filter(action="node.merge", target_id=nodes["first"].pk).count() == 2
    assert ok(api.post(DEDUP, owner, {"dryRun": False})) == {
        "dryRun": False,
        "groupCount": 0,
        "merged": 0,
        "groups": [],
    }
    assert Node.objects.filter(owner=alice, type="Task", merged_into__isnull=True).count() == 2


def test_dedup_personas_and_bad_input(
    api: Api, owner: Persona, other: Persona, outsider: Persona, revoked: Persona, alice: User
) -> None:
    duplicates(alice)
    assert ok(api.post(DEDUP, other, {}))["groupCount"] == 0
    assert ok(api.post(DEDUP, other, {"dryRun": False}))["merged"] == 0
    response = api.post(DEDUP, other, {"userId": "alice"})
    assert (response.status_code, error_code(response)) == (404, "NOT_FOUND")
    for persona, code in [(None, "AUTH_REQUIRED"), (outsider, "TOKEN_INVALID"), (revoked, "TOKEN_REVOKED")]:
        assert error_code(api.post(DEDUP, persona, {"dryRun": False})) == code
    editor = issue(alice, "editor", scopes=["read", "write", "edit"])
    assert error_code(api.post(DEDUP, editor, {"dryRun": False})) == "SCOPE_REQUIRED"
    for body, field in [({"dryRun": "maybe"}, "dryRun"), ({"groups": []}, "groups")]:
        response = api.post(DEDUP, owner, body)
        assert error_code(response) == "VALIDATION_ERROR" and field in response.json()["error"]["details"]
    assert Node.objects.filter(owner=alice, merged_into__isnull=False).count() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": "all"}, "limit"),
        ({"cursor": "%%%"}, "cursor"),
        ({"nodeIds": ["node_x"]}, "nodeIds"),
        ({"dryRun": False, "nodeIds": [1, {"a": 2}]}, "nodeIds"),
    ],
)
def test_orphan_bad_input(api: Api, owner: Persona, alice: User, body: dict[str, Any], field: str) -> None:
    named(alice, "Jorge")
    response = api.post(ORPHANS, owner, body)
    assert (response.status_code, error_code(response)) == (400, "VALIDATION_ERROR"), response.content
    assert field in response.json()["error"]["details"]
    assert Node.objects.filter(owner=alice).count() == 1


def test_orphan_personas(api: Api, other: Persona, outsider: Persona, revoked: Persona, alice: User) -> None:
    jorge = named(alice, "Jorge")
    assert ok(api.post(ORPHANS, other, {}))["candidateCount"] == 0
    applied = ok(api.post(ORPHANS, other, {"dryRun": False, "nodeIds": [jorge.pk]}))
    assert applied["skipped"] == [{"nodeId": jorge.pk, "reason": "not found (deleted or out of reach)"}]
    assert error_code(api.post(ORPHANS, other, {"userId": "alice"})) == "NOT_FOUND"
    for persona, code in [(None, "AUTH_REQUIRED"), (outsider, "TOKEN_INVALID"), (revoked, "TOKEN_REVOKED")]:
        assert error_code(api.post(ORPHANS, persona, {"dryRun": False})) == code
    assert Node.objects.filter(pk=jorge.pk).exists()

"""Nodes and aliases: list, read, neighbourhood, sources, update, delete, merge (preview equals apply)."""

from __future__ import annotations

import pytest

from memory.access import access_for_user
from memory.models import Alias, Claim, Evidence, MemoryEvent, Node
from memory.services.ingestion import DocumentIn, ingest_document
from memory.services.nodes import normalize_name
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import ClaimFactory, NodeFactory, PartitionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def graph(alice) -> dict[str, Node]:
    me = NodeFactory.create(owner=alice, type="Self", label="Alice", is_self=True)
    marcel = NodeFactory.create(owner=alice, label="Marcel")
    apollo = NodeFactory.create(owner=alice, type="Project", label="Apollo")
    source = ingest_document(
        access=access_for_user(user=alice), document=DocumentIn(id="d", content="Marcel leads Apollo.")
    ).source
    leads = ClaimFactory.create(
        owner=alice, statement="Marcel leads Apollo.", subject=marcel, predicate="LEADS", object_node=apollo
    )
    works = ClaimFactory.create(
        owner=alice, statement="I work with Marcel.", subject=me, predicate="WORKS_WITH", object_node=marcel
    )
    Evidence.objects.create(owner=alice, claim=leads, source=source, excerpt="Marcel leads Apollo.")
    Evidence.objects.create(owner=alice, claim=works, source=source, excerpt="Marcel")
    return {"me": me, "marcel": marcel, "apollo": apollo}


def test_normalised_names_ignore_case_accents_and_spacing() -> None:
    assert normalize_name("  José   Álvarez ") == normalize_name("jose alvarez") == "jose alvarez"


def test_listing_filters_by_type_and_label_or_alias(api: Api, owner: Persona, graph: dict[str, Node]) -> None:
    api.post("/alias/add", owner, {"nodeId": graph["marcel"].pk, "name": "Marc"})

    def labels(body: dict) -> list[str]:
        return [n["label"] for n in api.post("/node/list", owner, body).json()["nodes"]]

    assert labels({"type": ["Project"]}) == ["Apollo"]
    assert labels({"label": "marc"}) == ["Marcel"]
    assert sorted(labels({})) == ["Alice", "Apollo", "Marcel"]


def test_a_node_reads_with_aliases_and_claims(api: Api, owner: Persona, graph: dict[str, Node]) -> None:
    body = api.post("/node/get", owner, {"nodeId": graph["marcel"].pk}).json()
    assert body["node"]["label"] == "Marcel"
    assert [c["statement"] for c in body["claims"]] == ["Marcel leads Apollo."]


def test_the_neighbourhood_is_one_claim_away(api: Api, owner: Persona, graph: dict[str, Node]) -> None:
    body = api.post("/node/neighborhood", owner, {"nodeId": graph["marcel"].pk}).json()
    assert sorted(n["label"] for n in body["neighbors"]) == ["Alice", "Apollo"]
    assert len(body["claims"]) == 2


def test_node_sources_lists_the_evidence_behind_it(api: Api, owner: Persona, graph: dict[str, Node]) -> None:
    body = api.post("/node/sources", owner, {"nodeId": graph["apollo"].pk}).json()
    assert [(s["id"], s["evidenceCount"]) for s in body["sources"]] == [("d", 1)]


def test_renaming_keeps_the_old_label_as_an_alias(api: Api, owner: Persona, graph: dict[str, Node]) -> None:
    body = api.post("/node/update", owner, {"nodeId": graph["marcel"].pk, "label": "Marcel de Vries"}).json()
    assert body["node"]["label"] == "Marcel de Vries"
    assert body["node"]["aliases"] == ["Marcel"]
    assert MemoryEvent.objects.filter(action="node.update").exists()
    assert (
        error_code(api.post("/node/update", owner, {"nodeId": graph["marcel"].pk, "label": " "})) == "VALIDATION_ERROR"
    )


def test_aliases_are_idempotent_and_removable(api: Api, owner: Persona, graph: dict[str, Node]) -> None:
    node = graph["marcel"].pk
    api.post("/alias/add", owner, {"nodeId": node, "name": "Marc"})
    api.post("/alias/add", owner, {"nodeId": node, "name": "MARC "})
    assert Alias.objects.filter(node_id=node).count() == 1
    assert api.post("/alias/remove", owner, {"nodeId": node, "name": "marc"}).json()["removed"] == 1
    assert not Alias.objects.filter(node_id=node).exists()


def test_merge_preview_equals_apply(api: Api, owner: Persona, alice, graph: dict[str, Node]) -> None:
    duplicate = NodeFactory.create(owner=alice, label="M. de Vries")
    ClaimFactory.create(owner=alice, statement="M. de Vries likes tea.", subject=duplicate)
    body = {"sourceNodeId": duplicate.pk, "targetNodeId": graph["marcel"].pk}
    preview = api.post("/node/merge", owner, body).json()
    assert preview["applied"] is False
    assert Claim.objects.filter(subject=duplicate).count() == 1  # nothing moved
    applied = api.post("/node/merge", owner, {**body, "dryRun": False}).json()
    assert {**preview, "applied": True} == applied
    assert Claim.objects.filter(subject=graph["marcel"]).count() == 2
    assert Node.objects.get(pk=duplicate.pk).merged_into_id == graph["marcel"].pk
    assert "M. de Vries" in api.post("/node/get", owner, {"nodeId": graph["marcel"].pk}).json()["node"]["aliases"]
    assert error_code(api.post("/node/merge", owner, {**body, "dryRun": False})) == "CONFLICT"


def test_merges_that_make_no_sense_are_refused(api: Api, owner: Persona, alice, graph: dict[str, Node]) -> None:
    other = NodeFactory.create(owner=alice, partition=PartitionFactory.create(owner=alice, key="project:x"), label="X")
    same = {"sourceNodeId": graph["marcel"].pk, "targetNodeId": graph["marcel"].pk}
    assert error_code(api.post("/node/merge", owner, same)) == "VALIDATION_ERROR"
    selfish = {"sourceNodeId": graph["me"].pk, "targetNodeId": graph["marcel"].pk}
    assert error_code(api.post("/node/merge", owner, selfish)) == "CONFLICT"
    across = {"sourceNodeId": other.pk, "targetNodeId": graph["marcel"].pk}
    assert (
        error_code(api.post("/node/merge", owner, across, headers={"X-Memory-Access-Scope": "workspace"})) == "CONFLICT"
    )


def test_deleting_a_node_erases_the_claims_about_it(api: Api, owner: Persona, graph: dict[str, Node]) -> None:
    response = api.post("/node/delete", owner, {"nodeId": graph["apollo"].pk}).json()
    assert response["erasedClaims"] == 1
    assert list(Claim.objects.values_list("statement", flat=True)) == ["I work with Marcel."]
    assert error_code(api.post("/node/delete", owner, {"nodeId": graph["me"].pk})) == "CONFLICT"


def test_scopes_for_node_changes(api: Api, alice, graph: dict[str, Node]) -> None:
    reader = issue(alice, "reader", scopes=["read"])
    writer = issue(alice, "writer", scopes=["read", "write"])
    node = graph["marcel"].pk
    assert error_code(api.post("/node/update", reader, {"nodeId": node, "label": "x"})) == "SCOPE_REQUIRED"
    assert error_code(api.post("/alias/add", reader, {"nodeId": node, "name": "x"})) == "SCOPE_REQUIRED"
    assert error_code(api.post("/node/delete", writer, {"nodeId": node})) == "SCOPE_REQUIRED"
    merge = {"sourceNodeId": graph["apollo"].pk, "targetNodeId": node, "dryRun": False}
    assert error_code(api.post("/node/merge", writer, merge)) == "SCOPE_REQUIRED"
    assert api.post("/node/merge", reader, {**merge, "dryRun": True}).status_code == 200


def test_another_user_reaches_no_node(api: Api, other: Persona, graph: dict[str, Node]) -> None:
    node = graph["marcel"].pk
    for path, body in [
        ("/node/get", {"nodeId": node}), ("/node/neighborhood", {"nodeId": node}), ("/node/sources", {"nodeId": node}),
        ("/node/update", {"nodeId": node, "label": "x"}), ("/node/delete", {"nodeId": node}),
        ("/alias/add", {"nodeId": node, "name": "x"}), ("/alias/remove", {"nodeId": node, "name": "x"}),
        ("/node/merge", {"sourceNodeId": node, "targetNodeId": graph["apollo"].pk}),
    ]:  # fmt: skip
        assert error_code(api.post(path, other, body)) == "NOT_FOUND", path
    assert api.post("/node/list", other).json()["nodes"] == []
    assert Node.objects.get(pk=node).label == "Marcel"


def test_the_delete_preview_names_exactly_what_deleting_removes(api: Api, owner: Persona, alice, graph) -> None:
    from memory.services.nodes import node_delete, node_delete_preview

    access = access_for_user(user=alice)
    api.post("/alias/add", owner, {"nodeId": graph["marcel"].pk, "name": "Marc"})
    preview = node_delete_preview(access=access, node_id=graph["marcel"].pk)
    assert sorted(c.statement for c in preview.claims) == ["I work with Marcel.", "Marcel leads Apollo."]
    assert (preview.aliases, preview.evidence) == (1, 2)
    assert Node.objects.filter(pk=graph["marcel"].pk).exists()  # a preview removes nothing
    assert node_delete(access=access, node_id=graph["marcel"].pk) == len(preview.claims)
    assert not Claim.objects.filter(pk__in=[c.pk for c in preview.claims]).exists()
    with pytest.raises(Exception, match="self node"):
        node_delete_preview(access=access, node_id=graph["me"].pk)

"""Nodes and aliases over REST: list, read, neighbourhood, sources, update, delete, merge, aliases."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory import selectors
from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.openapi import ClaimOut, NodeOut, SourceOut, count, flag, many, maybe_text, one, shape, text
from memory.api.presenters import claim_json, node_json, source_json
from memory.models import NodeType
from memory.services import nodes

EXAMPLE = {"nodeId": "node_01kq54zhdwe4a94mj9nrrnne4h"}
NodeSourceOut = type("NodeSourceOut", (SourceOut,), {"__module__": __name__, "evidenceCount": count()})


class NodeIdIn(RequestSerializer):
    nodeId = serializers.CharField(max_length=40)


class NodeListIn(RequestSerializer):
    type = serializers.ListField(child=serializers.ChoiceField(choices=NodeType.values), required=False, max_length=20)
    label = serializers.CharField(max_length=300, required=False)  # type: ignore[assignment]
    includeMerged = serializers.BooleanField(default=False)
    cursor = serializers.CharField(max_length=500, required=False)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


class NodeUpdateIn(NodeIdIn):
    label = serializers.CharField(max_length=300, required=False)  # type: ignore[assignment]
    summary = serializers.CharField(max_length=5000, required=False, allow_blank=True)
    attributes = serializers.DictField(required=False)


class NodeMergeIn(RequestSerializer):
    sourceNodeId = serializers.CharField(max_length=40)
    targetNodeId = serializers.CharField(max_length=40)
    dryRun = serializers.BooleanField(default=True, help_text="Preview (default); false applies the merge.")


class AliasIn(NodeIdIn):
    name = serializers.CharField(max_length=300)


class LimitIn(NodeIdIn):
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


class NodeList(Endpoint):
    """Nodes in stable id order; filter by type and by label or alias."""

    tool = "node.list"
    response_schema = shape("NodePageOut", nodes=many(NodeOut), nextCursor=maybe_text())
    request_serializer = NodeListIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        found, cursor = selectors.nodes_for_access(
            access,
            types=data.get("type"),
            label=data.get("label"),
            include_merged=data["includeMerged"],
            cursor=data.get("cursor"),
            limit=data["limit"],
        )
        return {"nodes": [node_json(node) for node in found], "nextCursor": cursor}


class NodeGet(Endpoint):
    """One node with its aliases and its current claims (as subject)."""

    tool = "node.get"
    response_schema = shape("NodeWithClaimsOut", node=one(NodeOut), claims=many(ClaimOut))
    request_serializer = NodeIdIn
    example_request = EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        node = selectors.node_for_access(access, data["nodeId"])
        page = selectors.claims_for_access(access, subject_id=node.pk, limit=100)
        return {"node": node_json(node, aliases=True), "claims": [claim_json(claim) for claim in page.claims]}


class NodeNeighborhood(Endpoint):
    """The nodes one claim away and the claims that link them."""

    tool = "node.neighborhood"
    response_schema = shape("NeighborhoodOut", node=one(NodeOut), neighbors=many(NodeOut), claims=many(ClaimOut))
    request_serializer = LimitIn
    example_request = EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        node = selectors.node_for_access(access, data["nodeId"])
        neighbours, links = selectors.node_neighborhood(access, node, limit=data["limit"])
        return {
            "node": node_json(node),
            "neighbors": [node_json(other) for other in neighbours],
            "claims": [claim_json(claim) for claim in links],
        }


class NodeSources(Endpoint):
    """The sources behind the claims about a node."""

    tool = "node.sources"
    response_schema = shape("NodeSourcesOut", sources=many(NodeSourceOut))
    request_serializer = LimitIn
    example_request = EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        node = selectors.node_for_access(access, data["nodeId"])
        found = selectors.node_sources(access, node, limit=data["limit"])
        return {"sources": [{**source_json(source), "evidenceCount": count} for source, count in found]}


class NodeUpdate(Endpoint):
    """Rename or describe a node (needs `write`); an old label stays as an alias."""

    tool = "node.update"
    response_schema = shape("OneNodeOut", node=one(NodeOut))
    request_serializer = NodeUpdateIn
    example_request = {**EXAMPLE, "label": "Marcel de Vries"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        node = nodes.node_update(
            access=access,
            node_id=data["nodeId"],
            label=data.get("label"),
            summary=data.get("summary"),
            attributes=data.get("attributes"),
        )
        return {"node": node_json(node, aliases=True)}


class NodeDelete(Endpoint):
    """Erase a node and the claims about it (needs `edit`). The self node stays."""

    tool = "node.delete"
    response_schema = shape("NodeErasedOut", nodeId=text(), erasedClaims=count())
    request_serializer = NodeIdIn
    example_request = EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"nodeId": data["nodeId"], "erasedClaims": nodes.node_delete(access=access, node_id=data["nodeId"])}


class NodeMerge(Endpoint):
    """Merge one node into another: preview by default (`dryRun`), apply with `dryRun: false` (needs `edit`)."""

    tool = "node.merge"
    response_schema = shape(
        "NodeMergeOut", sourceNodeId=text(), targetNodeId=text(), claims=count(), aliases=count(), evidence=count(),
        superseded=count(), applied=flag(),
    )  # fmt: skip
    request_serializer = NodeMergeIn
    example_request = {
        "sourceNodeId": "node_01kq54zhdwe4a94mj9nrrnne4h",
        "targetNodeId": "node_01kq5509kfe4a94mj5k20j5z6y",
    }

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        plan = nodes.node_merge(
            access=access, source_id=data["sourceNodeId"], target_id=data["targetNodeId"], apply=not data["dryRun"]
        )
        return {**plan.as_dict(), "applied": not data["dryRun"]}


class AliasAdd(Endpoint):
    """Teach a node another name (needs `write`; idempotent)."""

    tool = "alias.add"
    response_schema = shape("AliasAddedOut", nodeId=text(), alias=text())
    request_serializer = AliasIn
    example_request = {**EXAMPLE, "name": "Marc"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        alias = nodes.alias_add(access=access, node_id=data["nodeId"], name=data["name"])
        return {"nodeId": data["nodeId"], "alias": alias.name}


class AliasRemove(Endpoint):
    """Forget a name of a node (needs `write`)."""

    tool = "alias.remove"
    response_schema = shape("AliasRemovedOut", nodeId=text(), removed=flag())
    request_serializer = AliasIn
    example_request = {**EXAMPLE, "name": "Marc"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        removed = nodes.alias_remove(access=access, node_id=data["nodeId"], name=data["name"])
        return {"nodeId": data["nodeId"], "removed": removed}

"""get_entity: a node found by name, read like /node/get."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory import selectors
from memory.access import Access
from memory.api.base import RequestSerializer
from memory.api.nodes import NodeGet
from memory.errors import NotFound
from memory.models import NodeType


class EntityIn(RequestSerializer):
    name = serializers.CharField(max_length=300, help_text="The name, label or alias of the entity.")
    type = serializers.ChoiceField(choices=NodeType.values, required=False, help_text="Only nodes of this type.")


def entity_get(access: Access, data: dict[str, Any]) -> dict[str, Any]:
    """The node whose label or alias is the name (the first in stable id order), with its current claims, and
    the ids of any other nodes of that name."""
    types = [data["type"]] if data.get("type") else None
    found, _ = selectors.nodes_for_access(access, types=types, label=data["name"], limit=5)
    if not found:
        raise NotFound("No entity of that name.", details={"name": data["name"]})
    answer = NodeGet().handle(access, {"nodeId": found[0].pk})
    return {**answer, "otherMatches": [node.pk for node in found[1:]]}

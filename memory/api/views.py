"""Access endpoints: who am I, and the partitions of my memory."""

from __future__ import annotations

from typing import Any

from memory import selectors
from memory.access import Access
from memory.api import serializers as s
from memory.api.base import Endpoint
from memory.services.partitions import partition_create, partition_deactivate


class Whoami(Endpoint):
    """The user and token behind this request and the partitions it reaches (strict or workspace)."""

    tool = "whoami"
    request_serializer = s.WhoamiIn
    response_serializer = s.WhoamiOut

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "userId": access.user.external_id,
            "username": access.user.username,
            "token": access.token,
            "access": {
                "mode": "workspace" if access.workspace else "strict",
                "partitionKey": access.partition.key if access.partition else None,
                "readPartitionKeys": [partition.key for partition in access.read_partitions],
            },
        }


class PartitionList(Endpoint):
    """The partitions this token reaches, active and inactive (`activeOnly` to hide inactive ones)."""

    tool = "partitions.list"
    request_serializer = s.PartitionListIn
    response_serializer = s.PartitionListOut

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"partitions": selectors.partitions_for_access(access, active_only=data["activeOnly"])}


class PartitionCreate(Endpoint):
    """Create a project partition (needs `write`). CONFLICT if the key is taken."""

    tool = "partitions.create"
    example_request = {"key": "project:apollo", "label": "Apollo"}
    request_serializer = s.PartitionCreateIn
    response_serializer = s.PartitionOneOut
    success_status = 201

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"partition": partition_create(access=access, key=data["key"], label=data["label"])}


class PartitionDeactivate(Endpoint):
    """Deactivate a partition (needs `edit`): hidden from workspace reads, closed to writes, nothing deleted."""

    tool = "partitions.deactivate"
    example_request = {"key": "project:apollo"}
    request_serializer = s.PartitionDeactivateIn
    response_serializer = s.PartitionOneOut

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"partition": partition_deactivate(access=access, key=data["key"])}

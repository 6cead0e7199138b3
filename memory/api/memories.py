"""Keyed memories over REST (seeds/004): save, get, list, history, delete, search. Reads wrap stored values
in UNTRUSTED_DATA markers."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory import selectors
from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.openapi import count, flag, many, mapping, maybe_text, one, shape, text, when
from memory.models import Claim, ClaimKind, ClaimOrigin
from memory.screening import wrap_untrusted
from memory.services.memories import memory_delete, memory_save, statement_for


def memory_json(claim: Claim) -> dict[str, Any]:
    return {
        "id": claim.pk,
        "key": claim.key,
        "value": wrap_untrusted(statement_for(claim.value)),
        "kind": claim.kind,
        "meta": claim.meta,
        "origin": claim.origin,
        "status": claim.status,
        "quarantined": claim.status == "quarantined",
        "partitionKey": claim.partition.key,
        "derivedFrom": claim.derived_from_id,
        "recordedAt": claim.recorded_at,
    }


MemoryOut = shape(
    "MemoryOut",
    id=text(), key=text(), value=text(help_text="Wrapped in UNTRUSTED_DATA markers."), kind=text(), meta=mapping(),
    origin=text(), status=text(), quarantined=flag(), partitionKey=text(), derivedFrom=maybe_text(),
    recordedAt=when(allow_null=True),
)  # fmt: skip
# What a keyed write answers (services.memories.SaveAck): the row as read back.
WriteAckOut = shape(
    "WriteAckOut", id=text(), key=text(), verified_persisted=flag(), deduplicated=flag(), quarantined=flag()
)
MemoriesOut = shape("MemoriesOut", memories=many(MemoryOut))


class KeyIn(RequestSerializer):
    key = serializers.CharField(max_length=300)


class ReadIn(KeyIn):
    includeQuarantined = serializers.BooleanField(default=False)


class SaveIn(KeyIn):
    value = serializers.JSONField()
    kind = serializers.ChoiceField(choices=ClaimKind.values, default=ClaimKind.NOTE)
    meta = serializers.DictField(required=False, default=dict)
    origin = serializers.ChoiceField(
        choices=[ClaimOrigin.USER_STATED, ClaimOrigin.ASSISTANT_INFERRED, ClaimOrigin.IMPORTED, ClaimOrigin.MANUAL],
        default=ClaimOrigin.ASSISTANT_INFERRED,
    )
    eventId = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class DeleteIn(KeyIn):
    eventId = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    eraseHistory = serializers.BooleanField(
        default=False, help_text="Erase every value the key ever had (and its audit content) instead of retiring it."
    )


class MemoryListIn(RequestSerializer):
    kind = serializers.ChoiceField(choices=ClaimKind.values, required=False)
    prefix = serializers.CharField(max_length=300, required=False, default="")
    includeQuarantined = serializers.BooleanField(default=False)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


class MemorySearchIn(RequestSerializer):
    query = serializers.CharField(max_length=1000)
    includeQuarantined = serializers.BooleanField(default=False)
    limit = serializers.IntegerField(default=10, min_value=1, max_value=100)


class MemorySave(Endpoint):
    """Save a value under a key (needs `write`). `eventId` makes it exactly-once. Instruction-shaped values
    from an assistant or an import are quarantined (see `quarantined` in the answer)."""

    tool = "memory.save"
    response_schema = WriteAckOut
    request_serializer = SaveIn
    example_request = {"key": "project.apollo.db", "value": "PostgreSQL 18", "kind": "decision", "eventId": "ev-1"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        ack = memory_save(
            access=access, key=data["key"], value=data["value"], kind=data["kind"], meta=data["meta"],
            origin=data["origin"], event_id=data["eventId"],
        )  # fmt: skip
        return ack.as_dict()


class MemoryGet(Endpoint):
    """The current value of a key."""

    tool = "memory.get"
    fast_lane = True
    response_schema = shape("OneMemoryOut", memory=one(MemoryOut))
    request_serializer = ReadIn
    example_request = {"key": "project.apollo.db"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        claim = selectors.memory_for_access(access, data["key"], include_quarantined=data["includeQuarantined"])
        return {"memory": memory_json(claim)}


class MemoryList(Endpoint):
    """Current keyed memories, by key; filter by kind and key prefix."""

    tool = "memory.list"
    response_schema = MemoriesOut
    request_serializer = MemoryListIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        found = selectors.memories_for_access(
            access, kind=data.get("kind"), prefix=data["prefix"], include_quarantined=data["includeQuarantined"],
            limit=data["limit"],
        )  # fmt: skip
        return {"memories": [memory_json(claim) for claim in found]}


class MemoryHistory(Endpoint):
    """Every revision saved under a key, oldest first."""

    tool = "memory.history"
    response_schema = shape("MemoryHistoryOut", revisions=many(MemoryOut))
    request_serializer = KeyIn
    example_request = {"key": "project.apollo.db"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"revisions": [memory_json(claim) for claim in selectors.memory_history(access, data["key"])]}


class MemoryDelete(Endpoint):
    """Retire a key (needs `edit`): it has no current value any more, its history is kept and a new save starts
    over. `eraseHistory: true` erases every revision instead. `eventId` makes a replay answer deduplicated."""

    tool = "memory.delete"
    response_schema = shape("MemoryErasedOut", key=text(), erasedRevisions=count(), deduplicated=flag())
    request_serializer = DeleteIn
    example_request = {"key": "project.apollo.db"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return memory_delete(
            access=access, key=data["key"], event_id=data["eventId"], erase_history=data["eraseHistory"]
        )


class MemorySearch(Endpoint):
    """Keyed memories by meaning first (the active embedder's vectors), then by words (full text, then
    substring) up to `limit`."""

    tool = "memory.search"
    fast_lane = True
    response_schema = MemoriesOut
    request_serializer = MemorySearchIn
    example_request = {"query": "apollo database"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        found = selectors.memories_matching(
            access, data["query"], include_quarantined=data["includeQuarantined"], limit=data["limit"]
        )
        return {"memories": [memory_json(claim) for claim in found]}

"""The scratchpad over REST: read (wrapped as untrusted data), write, edit with an expected version."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.openapi import count, shape, text, when
from memory.models import Scratchpad
from memory.screening import wrap_untrusted
from memory.services.scratchpad import scratchpad_edit, scratchpad_read, scratchpad_write


def scratchpad_json(pad: Scratchpad) -> dict[str, Any]:
    return {
        "partitionKey": pad.partition.key,
        "content": wrap_untrusted(pad.content),
        "version": pad.version,
        "updatedAt": pad.updated_at,
    }


ScratchpadOut = shape(
    "ScratchpadOut",
    partitionKey=text(),
    content=text(allow_blank=True),
    version=count(),
    updatedAt=when(allow_null=True),
)


class WriteIn(RequestSerializer):
    content = serializers.CharField(allow_blank=True, trim_whitespace=False)
    expectedVersion = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=0)


class EditIn(RequestSerializer):
    find = serializers.CharField(trim_whitespace=False)
    replace = serializers.CharField(allow_blank=True, trim_whitespace=False)
    expectedVersion = serializers.IntegerField(min_value=0)
    replaceAll = serializers.BooleanField(default=False)


class ScratchpadRead(Endpoint):
    """The partition's scratchpad and its version."""

    tool = "scratchpad.read"
    fast_lane = True
    response_schema = ScratchpadOut

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return scratchpad_json(scratchpad_read(access))


class ScratchpadWrite(Endpoint):
    """Replace the scratchpad (needs `write`); with `expectedVersion`, CONFLICT if someone wrote since."""

    tool = "scratchpad.write"
    response_schema = ScratchpadOut
    request_serializer = WriteIn
    example_request = {"content": "Plan for today", "expectedVersion": 0}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        pad = scratchpad_write(access=access, content=data["content"], expected_version=data["expectedVersion"])
        return scratchpad_json(pad)


class ScratchpadEdit(Endpoint):
    """Find and replace (needs `write`) at the version you read; CONFLICT when stale or ambiguous."""

    tool = "scratchpad.edit"
    response_schema = ScratchpadOut
    request_serializer = EditIn
    example_request = {"find": "today", "replace": "tomorrow", "expectedVersion": 1}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        pad = scratchpad_edit(
            access=access, find=data["find"], replace=data["replace"], expected_version=data["expectedVersion"],
            replace_all=data["replaceAll"],
        )  # fmt: skip
        return scratchpad_json(pad)

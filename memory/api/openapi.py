"""Shapes for the OpenAPI document: the one error shape, and the answers endpoints build as plain dicts.

These serializers only describe; endpoints that return dicts keep rendering them as they are. The contract
tests (tests/test_openapi.py and the schemathesis run in tests/test_openapi_conformance.py) check the
document against the real answers, so a shape that drifts from its presenter fails a test.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory.errors import ERROR_KINDS
from memory.models import ClaimKind, ClaimStatus

# Every endpoint can answer these: bad input (400), no or bad token (401), a missing scope (403), out of
# reach (404), an inactive partition or a conflict (409), an oversized body (413), a wrong content type
# (415), the rate limit (429), a bug (500) and a backing service down (503).
ERROR_STATUSES: tuple[int, ...] = (400, 401, 403, 404, 406, 409, 413, 415, 429, 500, 503)
ERROR_CODES = sorted(ERROR_KINDS)
# Named enums (settings.SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]): the choices as the serializers list them.
CLAIM_KINDS = list(ClaimKind.values)
CLAIM_STATUSES = list(ClaimStatus.values)


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=ERROR_CODES, help_text="Stable, upper-case.")
    message = serializers.CharField()
    remedy = serializers.CharField(help_text="What the caller can do about it.")
    details = serializers.DictField(help_text="Field errors for VALIDATION_ERROR; otherwise per code.")


class ErrorSerializer(serializers.Serializer):
    """The one error shape of every endpoint (REST and MCP)."""

    error = ErrorBodySerializer()


def shape(name: str, **fields: serializers.Field) -> type[serializers.Serializer]:
    """A documentation-only serializer named `name` (its OpenAPI component) with these fields."""
    return type(name, (serializers.Serializer,), {"__module__": __name__, **fields})


def text(**options: Any) -> serializers.CharField:
    return serializers.CharField(**options)


def maybe_text(**options: Any) -> serializers.CharField:
    return serializers.CharField(allow_null=True, **options)


def when(**options: Any) -> serializers.DateTimeField:
    return serializers.DateTimeField(**options)


def maybe_when(**options: Any) -> serializers.DateTimeField:
    return serializers.DateTimeField(allow_null=True, **options)


def number(**options: Any) -> serializers.FloatField:
    return serializers.FloatField(**options)


def count(**options: Any) -> serializers.IntegerField:
    return serializers.IntegerField(**options)


def flag(**options: Any) -> serializers.BooleanField:
    return serializers.BooleanField(**options)


def anything(**options: Any) -> serializers.JSONField:
    return serializers.JSONField(**options)


def mapping(**options: Any) -> serializers.DictField:
    return serializers.DictField(**options)


def texts(**options: Any) -> serializers.ListField:
    return serializers.ListField(child=serializers.CharField(), **options)


def many(of: type[serializers.Serializer], **options: Any) -> serializers.Serializer:
    return of(many=True, **options)


def one(of: type[serializers.Serializer], **options: Any) -> serializers.Serializer:
    return of(**options)


# The presenters of memory/api/presenters.py, field for field.
NodeRefOut = shape("NodeRefOut", nodeId=text(), type=text(), label=text())
EvidenceOut = shape("EvidenceOut", sourceId=text(), excerpt=text(), messageId=maybe_text(), authoredAt=maybe_when())
ClaimOut = shape(
    "ClaimOut",
    claimId=text(), statement=text(), kind=text(), status=text(), origin=text(), scope=text(), partitionKey=text(),
    subject=one(NodeRefOut, allow_null=True), predicate=maybe_text(), object=one(NodeRefOut, allow_null=True),
    objectValue=anything(allow_null=True), key=maybe_text(), value=anything(allow_null=True),
    confidence=number(allow_null=True), importance=count(allow_null=True), pinned=flag(), extractor=maybe_text(),
    modelName=maybe_text(), reason=maybe_text(), derivedFrom=maybe_text(), supersededBy=maybe_text(),
    validFrom=maybe_when(), validUntil=maybe_when(), statedAt=maybe_when(), recordedAt=maybe_when(),
    expiresAt=maybe_when(), needsReverification=flag(), evidence=many(EvidenceOut),
)  # fmt: skip
NodeOut = shape(
    "NodeOut",
    nodeId=text(), type=text(), label=text(), summary=text(allow_blank=True), scope=text(), isSelf=flag(),
    partitionKey=text(), attributes=mapping(), mergedInto=maybe_text(), lastSeenAt=maybe_when(), createdAt=when(),
    aliases=texts(required=False, help_text="Only where the answer says a node comes with its aliases."),
)  # fmt: skip
SourceOut = shape(
    "SourceOut",
    sourceId=text(), kind=text(), scope=text(), id=text(), partitionKey=text(), parentId=maybe_text(),
    title=text(allow_blank=True), version=count(), sourceContext=anything(allow_null=True), messageId=maybe_text(),
    threadId=maybe_text(), role=maybe_text(), speaker=maybe_text(), authoredAt=maybe_when(),
    participants=anything(allow_null=True), filename=maybe_text(), mimeType=maybe_text(), occurredAt=maybe_when(),
    createdAt=when(), tombstonedAt=maybe_when(),
)  # fmt: skip
BlobOut = shape("BlobOut", sha256=text(), size=count(), mimeType=text(allow_blank=True), createdAt=when(), href=text())

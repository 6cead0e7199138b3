"""Request and response shapes of ingestion and sources (seeds/000 field names)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from rest_framework import serializers

from memory.api.base import RequestSerializer, StrictSerializer
from memory.api.fields import plausible_time
from memory.models import OperationStatus, SourceKind, SourceScope

MAX_CONTEXT_BYTES = 32 * 1024


class SourceContextField(serializers.JSONField):
    """Facts the host supplies about origin, authorship, relationships, chronology and completeness."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("sourceContext must be a JSON object.")
        encoded = json.dumps(value)
        if "\\u0000" in encoded:  # PostgreSQL cannot store NUL characters
            raise serializers.ValidationError("sourceContext must not contain NUL characters.")
        if len(encoded) > MAX_CONTEXT_BYTES:
            raise serializers.ValidationError(f"sourceContext is larger than {MAX_CONTEXT_BYTES} bytes.")
        return value


class MessageIn(StrictSerializer):
    id = serializers.CharField(max_length=200)
    role = serializers.CharField(max_length=32, required=False, allow_blank=True, default="")
    content = serializers.CharField(trim_whitespace=False)
    timestamp = serializers.DateTimeField(required=False, allow_null=True, default=None, validators=[plausible_time])
    speaker = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class ConversationIn(StrictSerializer):
    id = serializers.CharField(max_length=200)
    title = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    scope = serializers.ChoiceField(choices=SourceScope.values, default=SourceScope.PERSONAL)
    sourceContext = SourceContextField(required=False, default=dict)
    messages = MessageIn(many=True, allow_empty=False, max_length=2000)  # type: ignore[call-arg]

    def validate_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        counts = Counter(message["id"] for message in messages)
        repeated = sorted(message_id for message_id, count in counts.items() if count > 1)
        if repeated:
            raise serializers.ValidationError(f"Message ids must be unique within a request: {repeated}.")
        return messages


class IngestConversationIn(RequestSerializer):
    conversation = ConversationIn()
    updateExisting = serializers.BooleanField(default=False)


class ParticipantIn(StrictSerializer):
    email = serializers.EmailField(required=False)
    providerId = serializers.CharField(max_length=200, required=False)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    role = serializers.CharField(max_length=32, required=False, allow_blank=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("email") and not attrs.get("providerId"):
            raise serializers.ValidationError("A participant needs an email or a stable providerId.")
        return attrs


class DocumentMetaIn(StrictSerializer):
    """A document without its content: the `document` part of /ingest/file."""

    id = serializers.CharField(max_length=300)
    title = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    scope = serializers.ChoiceField(choices=SourceScope.values, default=SourceScope.PERSONAL)
    timestamp = serializers.DateTimeField(required=False, allow_null=True, default=None, validators=[plausible_time])
    sourceContext = SourceContextField(required=False, default=dict)
    sourceKind = serializers.ChoiceField(choices=[SourceKind.DOCUMENT, SourceKind.MESSAGE], default=SourceKind.DOCUMENT)
    messageId = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    threadId = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    authoredAt = serializers.DateTimeField(required=False, allow_null=True, default=None, validators=[plausible_time])
    participants = ParticipantIn(many=True, required=False, default=list, max_length=500)  # type: ignore[call-arg]
    parentId = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")


class DocumentIn(DocumentMetaIn):
    content = serializers.CharField(trim_whitespace=False)


class IngestDocumentIn(RequestSerializer):
    document = DocumentIn()
    updateExisting = serializers.BooleanField(default=False)


class IngestFileFieldsIn(RequestSerializer):
    document = DocumentMetaIn()
    updateExisting = serializers.BooleanField(default=False)


class SegmentIn(StrictSerializer):
    speaker = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    text = serializers.CharField(trim_whitespace=False)
    start = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0)
    timestamp = serializers.DateTimeField(required=False, allow_null=True, default=None, validators=[plausible_time])


class TranscriptIn(StrictSerializer):
    id = serializers.CharField(max_length=300)
    title = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    scope = serializers.ChoiceField(choices=SourceScope.values, default=SourceScope.PERSONAL)
    timestamp = serializers.DateTimeField(required=False, allow_null=True, default=None, validators=[plausible_time])
    sourceContext = SourceContextField(required=False, default=dict)
    sourceKind = serializers.CharField(
        max_length=64, required=False, allow_blank=True, default="", help_text="Origin, e.g. meeting or call."
    )
    segments = SegmentIn(many=True, required=False, max_length=20000)  # type: ignore[call-arg]
    content = serializers.CharField(
        required=False, trim_whitespace=False, help_text="Plain text, one 'Speaker: text' line per turn."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if bool(attrs.get("segments")) == bool(attrs.get("content")):
            raise serializers.ValidationError({"segments": ["Send either segments or content."]})
        return attrs


class IngestTranscriptIn(RequestSerializer):
    transcript = TranscriptIn()
    updateExisting = serializers.BooleanField(default=False)


class ReceiptOut(serializers.Serializer):
    operationId = serializers.CharField()
    sourceId = serializers.CharField()
    status = serializers.CharField()
    deduplicated = serializers.BooleanField()


class OperationIn(RequestSerializer):
    operationId = serializers.CharField(max_length=40)


class OperationOut(serializers.Serializer):
    operationId = serializers.CharField()
    sourceId = serializers.CharField(allow_null=True)
    sourceVersion = serializers.IntegerField()
    status = serializers.CharField()
    step = serializers.CharField()
    stepsDone = serializers.ListField(child=serializers.DictField())
    counts = serializers.DictField()
    errorCode = serializers.CharField(allow_null=True)
    errorMessage = serializers.CharField(allow_null=True)
    attempts = serializers.IntegerField()
    queuedAt = serializers.DateTimeField()
    startedAt = serializers.DateTimeField(allow_null=True)
    finishedAt = serializers.DateTimeField(allow_null=True)


class SourceGetIn(RequestSerializer):
    sourceId = serializers.CharField(max_length=40)
    includeContent = serializers.BooleanField(default=False)


class SourceListIn(RequestSerializer):
    kind = serializers.ChoiceField(choices=SourceKind.values, required=False)
    scope = serializers.ChoiceField(choices=SourceScope.values, required=False)
    since = serializers.DateTimeField(required=False, validators=[plausible_time])
    until = serializers.DateTimeField(required=False, validators=[plausible_time])
    includeTombstoned = serializers.BooleanField(default=False)
    status = serializers.ChoiceField(
        choices=OperationStatus.values, required=False, help_text="Only sources whose newest receipt has this status."
    )
    cursor = serializers.CharField(required=False, max_length=500)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


class SourceDeleteIn(RequestSerializer):
    sourceId = serializers.CharField(max_length=40)
    retireIdentity = serializers.BooleanField(
        default=False, help_text="Refuse this id from now on, so a sync cannot bring the material back."
    )


class ArtifactListIn(RequestSerializer):
    cursor = serializers.CharField(required=False, max_length=500)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


class ArtifactQueryIn(RequestSerializer):
    """GET /artifact/<sha256>: only userId / partitionKey, as query parameters."""

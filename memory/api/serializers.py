"""Request and response shapes of the access endpoints (camelCase, as chat hosts send them)."""

from __future__ import annotations

from rest_framework import serializers

from memory.api.base import RequestSerializer


class WhoamiIn(RequestSerializer):
    """Only the common fields: whose memory, which partition."""


class PartitionOut(serializers.Serializer):
    id = serializers.CharField()
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    isActive = serializers.BooleanField(source="is_active")
    createdAt = serializers.DateTimeField(source="created_at")
    deactivatedAt = serializers.DateTimeField(source="deactivated_at", allow_null=True)


class PartitionListIn(RequestSerializer):
    activeOnly = serializers.BooleanField(required=False, default=False)


class PartitionListOut(serializers.Serializer):
    partitions = PartitionOut(many=True)


class PartitionCreateIn(RequestSerializer):
    key = serializers.CharField(max_length=64)
    label = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")  # type: ignore[assignment]


class PartitionDeactivateIn(RequestSerializer):
    key = serializers.CharField(max_length=64)


class PartitionOneOut(serializers.Serializer):
    partition = PartitionOut()


class TokenOut(serializers.Serializer):
    id = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    prefix = serializers.CharField()
    surface = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    profile = serializers.CharField()
    partitionKeys = serializers.ListField(child=serializers.CharField(), source="partition_keys")
    defaultPartitionKey = serializers.CharField(source="default_partition_key")
    allowQueryToken = serializers.BooleanField(source="allow_query_token")
    expiresAt = serializers.DateTimeField(source="expires_at", allow_null=True)


class AccessOut(serializers.Serializer):
    mode = serializers.ChoiceField(choices=["strict", "workspace"])
    partitionKey = serializers.CharField(allow_null=True, help_text="The strict partition: target of writes.")
    readPartitionKeys = serializers.ListField(child=serializers.CharField())


class WhoamiOut(serializers.Serializer):
    userId = serializers.CharField()
    username = serializers.CharField()
    token = TokenOut()
    access = AccessOut()

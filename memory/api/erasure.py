"""Erasure over REST (issue 15): a partition, an agent session, an artifact, metric observations, a metric.

Each needs `edit`. Bulk erasures preview by default (`dryRun: true`); erasing a partition also needs its key
typed again as `confirm`. A whole account is erased only from the command line or the admin
(`manage.py erase_user`): no token can erase the user it belongs to.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.request import Request

from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.openapi import count, flag, mapping, maybe_text, shape, text
from memory.errors import ValidationFailed
from memory.services.account_erasure import partition_erase
from memory.services.erasure import artifact_erase, session_erase
from metrics.api import SLUG, MetricRefIn
from metrics.erasure import MAX_IDS, metric_definition_erase, observations_erase


class PartitionEraseIn(RequestSerializer):
    key = serializers.CharField(max_length=64, help_text="The partition to erase.")
    dryRun = serializers.BooleanField(default=True, help_text="Only count what would go (the default).")
    confirm = serializers.CharField(
        max_length=64, required=False, help_text="With dryRun false: the partition's key typed again."
    )


class PartitionErase(Endpoint):
    """Erase a partition and everything in it (needs `edit`): sources and their files, chunks, nodes, claims,
    keyed memories, the scratchpad, sessions, metrics, artifacts, feedback, and the content of its audit
    rows. `dryRun` (default true) only counts; to apply, send `dryRun: false` and the key again as `confirm`.
    memory:personal is emptied and kept (every user has one); any other partition goes."""

    tool = "partitions.erase"
    request_serializer = PartitionEraseIn
    response_schema = shape(
        "PartitionErasedOut", partitionKey=text(), dryRun=flag(), counts=mapping(), erasedBlobs=count(),
        keptEmpty=flag(),
    )  # fmt: skip
    example_request = {"key": "project:apollo"}

    def parse(self, request: Request) -> dict[str, Any]:
        """REST asks for the key typed again; an MCP call confirms with `confirm: true` instead (mcp_bridge)."""
        data = super().parse(request)
        if not data["dryRun"] and data.get("confirm") != data["key"]:
            raise ValidationFailed(
                "Type the partition's key as confirm to erase it.",
                details={"confirm": [f"Must be {data['key']!r} when dryRun is false."]},
            )
        return data

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        erased = partition_erase(access=access, key=data["key"], dry_run=data["dryRun"])
        return {"partitionKey": erased.partition_key, "dryRun": erased.dry_run, "counts": erased.counts,
                "erasedBlobs": erased.blobs, "keptEmpty": erased.kept_empty}  # fmt: skip


class SessionEraseIn(RequestSerializer):
    sessionId = serializers.CharField(max_length=40)


class SessionErase(Endpoint):
    """Erase an agent session (needs `edit`): its events and what curating it made (its derived source and
    the claims only it backs). A handoff saved under a topic is a keyed memory of its own: /memory/delete."""

    tool = "session.erase"
    request_serializer = SessionEraseIn
    response_schema = shape(
        "SessionErasedOut", sessionId=text(), erasedEvents=count(), erasedSources=count(), erasedClaims=count()
    )
    example_request = {"sessionId": "ses_01kq54zhdye4a94mjmw0wev9jx"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        erased = session_erase(access=access, session_id=data["sessionId"])
        return {"sessionId": erased.session_id, "erasedEvents": erased.events, "erasedSources": erased.sources,
                "erasedClaims": erased.claims}  # fmt: skip


class ArtifactEraseIn(RequestSerializer):
    sha256 = serializers.RegexField(r"^[0-9a-fA-F]{64}$", help_text="The artifact's content address.")


class ArtifactErase(Endpoint):
    """Erase an artifact from the partitions this request reaches (needs `edit`); its bytes leave the disk
    once nothing else keeps them. Refused (CONFLICT) while a file source keeps the same bytes: erase it
    first with /source/delete."""

    tool = "artifact.erase"
    request_serializer = ArtifactEraseIn
    response_schema = shape("ArtifactErasedOut", sha256=text(), erasedPlacements=count())
    more_error_statuses = (409,)
    example_request = {"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        erased = artifact_erase(access=access, sha256=data["sha256"])
        return {"sha256": erased.sha256, "erasedPlacements": erased.partitions}


class ObservationsEraseIn(RequestSerializer):
    observationIds = serializers.ListField(
        child=serializers.CharField(max_length=40), required=False, min_length=1, max_length=MAX_IDS
    )
    metricId = serializers.CharField(max_length=40, required=False)
    slug = serializers.RegexField(SLUG, max_length=64, required=False)
    since = serializers.DateTimeField(required=False, help_text="From this moment (inclusive).")
    until = serializers.DateTimeField(required=False, help_text="Up to this moment (exclusive).")
    dryRun = serializers.BooleanField(default=True, help_text="Only count what would go (the default).")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        by_metric = bool(attrs.get("metricId")) or bool(attrs.get("slug"))
        if bool(attrs.get("observationIds")) == by_metric:
            raise serializers.ValidationError({"observationIds": ["Give observationIds, or metricId or slug."]})
        if attrs.get("metricId") and attrs.get("slug"):
            raise serializers.ValidationError({"metricId": ["Give metricId or slug (one of them)."]})
        if attrs.get("observationIds") and ("since" in attrs or "until" in attrs):
            raise serializers.ValidationError({"since": ["A time range goes with metricId or slug."]})
        if attrs.get("since") and attrs.get("until") and attrs["since"] >= attrs["until"]:
            raise serializers.ValidationError({"until": ["Must be after since."]})
        return attrs


class ObservationsErase(Endpoint):
    """Erase metric observations (needs `edit`): by id, or a metric's observations in [since, until) (either
    bound may be left open). Each goes with its reading claim. `dryRun` (default true) only counts."""

    tool = "metrics.observations.erase"
    request_serializer = ObservationsEraseIn
    response_schema = shape("ObservationsErasedOut", dryRun=flag(), observations=count(), erasedClaims=count())
    example_request = {"slug": "body_weight", "since": "2026-01-01T00:00:00Z"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        erased = observations_erase(
            access=access, observation_ids=data.get("observationIds"), metric_id=data.get("metricId", ""),
            slug=data.get("slug", ""), start=data.get("since"), end=data.get("until"), dry_run=data["dryRun"],
        )  # fmt: skip
        return {"dryRun": erased.dry_run, "observations": erased.observations, "erasedClaims": erased.claims}


class DefinitionEraseIn(MetricRefIn):
    dryRun = serializers.BooleanField(default=True, help_text="Only count what would go (the default).")


class DefinitionErase(Endpoint):
    """Erase a metric (needs `edit`): its definition, every observation with its reading claim, and its
    review task. `dryRun` (default true) only counts."""

    tool = "metrics.definitions.erase"
    request_serializer = DefinitionEraseIn
    response_schema = shape(
        "MetricErasedOut", metricId=text(), slug=maybe_text(), dryRun=flag(), observations=count(),
        erasedClaims=count(),
    )  # fmt: skip
    example_request = {"slug": "body_weight"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        erased = metric_definition_erase(
            access=access, metric_id=data.get("metricId", ""), slug=data.get("slug", ""), dry_run=data["dryRun"]
        )
        return {"metricId": erased.metric_id, "slug": erased.slug, "dryRun": erased.dry_run,
                "observations": erased.observations, "erasedClaims": erased.claims}  # fmt: skip

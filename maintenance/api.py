"""Maintenance over REST (SPEC §11): previews need `read`, applying needs `maintenance`, and `dryRun` is true
unless the caller says otherwise. Each endpoint translates its body, calls one service of this app and
renders the answer; the same endpoints are the MCP tools of the full profile."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from commitments.api import RecoveryOut, recovery_answer
from maintenance.cleanup import cleanup_run
from maintenance.dedup import DedupResult, dedup_sweep
from maintenance.orphans import OrphanPreview, prune_orphans_apply, prune_orphans_preview
from maintenance.pruning import (
    MAX_IDLE_DAYS,
    MAX_PAGE,
    Applied,
    Thresholds,
    prune_stale_apply,
    prune_stale_preview,
)
from maintenance.scoring import AGGRESSIVENESS, min_score_for
from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.openapi import count, flag, many, maybe_text, number, one, shape, text, texts, when
from memory.models import Node

NODE_IDS_HELP = "To apply (dryRun: false): the nodeIds of the preview; only those that still qualify are deleted."


AGGRESSIVENESS_SCHEMA = {
    "oneOf": [{"type": "string", "enum": list(AGGRESSIVENESS)}, {"type": "number", "minimum": 0, "maximum": 1}]
}


@extend_schema_field(AGGRESSIVENESS_SCHEMA)
class AggressivenessField(serializers.Field):
    """low, medium or high, or a number from 0 to 1 (higher prunes more)."""

    json_schema = AGGRESSIVENESS_SCHEMA  # for the MCP tool's input schema (mcp_bridge/schemas.py)
    default_error_messages = {"invalid": "One of low, medium, high, or a number from 0 to 1."}

    def to_internal_value(self, data: Any) -> str | float:
        if isinstance(data, str) and data in AGGRESSIVENESS:
            return data
        if isinstance(data, int | float) and not isinstance(data, bool) and 0 <= data <= 1:
            return float(data)
        self.fail("invalid")
        raise AssertionError  # fail() raises

    def to_representation(self, value: Any) -> Any:
        return value


class PagedIn(RequestSerializer):
    dryRun = serializers.BooleanField(default=True, help_text="Preview (default); false applies.")
    limit = serializers.IntegerField(default=50, min_value=1, max_value=MAX_PAGE, help_text="Nodes per page.")
    cursor = serializers.CharField(required=False, max_length=1000, help_text="nextCursor of the previous page.")
    nodeIds = serializers.ListField(
        child=serializers.CharField(max_length=40), required=False, max_length=MAX_PAGE, help_text=NODE_IDS_HELP
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["dryRun"] and "nodeIds" in attrs:
            raise serializers.ValidationError({"nodeIds": ["Only for applying (dryRun: false)."]})
        return attrs


class PruneStaleIn(PagedIn):
    aggressiveness = AggressivenessField(
        required=False, default="medium",
        help_text="low, medium (default) or high, or a number from 0 to 1: the score floor is 0.9 - 0.5 x it.",
    )  # fmt: skip
    minScore = serializers.FloatField(required=False, min_value=0, max_value=1, help_text="Overrides aggressiveness.")
    minIdleDays = serializers.IntegerField(default=30, min_value=0, max_value=MAX_IDLE_DAYS)
    includeReference = serializers.BooleanField(default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if not attrs["dryRun"] and not attrs.get("nodeIds"):
            raise serializers.ValidationError({"nodeIds": ["Pass the nodeIds of the preview to apply it."]})
        return attrs


TermsOut = shape("StaleTermsOut", staleness=number(), isolation=number(), weakProvenance=number(), claimDecay=number())
StaleNodeOut = shape(
    "StaleNodeOut", nodeId=text(), type=text(), label=text(), partitionKey=text(), score=number(), terms=one(TermsOut),
    idleDays=count(), reason=text(),
)  # fmt: skip
SkippedOut = shape("PruneSkippedOut", nodeId=text(), reason=text())
NodeRowOut = shape("PrunableNodeOut", nodeId=text(), type=text(), label=text(), partitionKey=text())
PREVIEW = {"help_text": "Preview only.", "required": False}
APPLIED = {"help_text": "Apply only.", "required": False}


def thresholds_of(data: dict[str, Any]) -> Thresholds:
    floor = data.get("minScore")
    return Thresholds(
        min_score=floor if floor is not None else min_score_for(data["aggressiveness"]),
        min_idle_days=data["minIdleDays"],
        include_reference=data["includeReference"],
    )


def applied_json(result: Applied) -> dict[str, Any]:
    return {
        "deleted": result.deleted,
        "deletedCount": len(result.deleted),
        "skipped": [item.as_dict() for item in result.skipped],
    }


class PruneStaleNodes(Endpoint):
    """Stale nodes (seeds/000 score 0.40·staleness + 0.25·isolation + 0.20·weakProvenance + 0.15·claimDecay):
    a preview (the default, needs `read`) lists the candidates, highest score first, with each term and a
    reason in words, a page at a time (`cursor`, `hasMore`). Applying (`dryRun: false`, needs `maintenance`)
    takes the preview's `nodeIds` back and deletes those that still qualify with their claims, aliases,
    evidence links and vectors; the rest are reported as skipped. Never pruned: nodes seen within
    minIdleDays, open tasks and what they link to, the self node, nodes of pinned claims, reference nodes
    (unless includeReference) and merged-away pointers."""

    tool = "maintenance.prune_stale_nodes"
    request_serializer = PruneStaleIn
    response_schema = shape(
        "PruneStaleOut", dryRun=flag(), minScore=number(), minIdleDays=count(), includeReference=flag(),
        asOf=when(**PREVIEW), candidateCount=count(**PREVIEW), nodes=many(StaleNodeOut, **PREVIEW),
        nodeIds=texts(**PREVIEW), hasMore=flag(**PREVIEW), nextCursor=maybe_text(**PREVIEW),
        deleted=texts(**APPLIED), deletedCount=count(**APPLIED), skipped=many(SkippedOut, **APPLIED),
        claimsErased=count(**APPLIED),
    )  # fmt: skip
    example_request = {"aggressiveness": "medium", "minIdleDays": 30, "limit": 50}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        thresholds = thresholds_of(data)
        answer: dict[str, Any] = {
            "dryRun": data["dryRun"],
            "minScore": thresholds.min_score,
            "minIdleDays": thresholds.min_idle_days,
            "includeReference": thresholds.include_reference,
        }
        if not data["dryRun"]:
            result = prune_stale_apply(access=access, node_ids=data["nodeIds"], thresholds=thresholds)
            return {**answer, **applied_json(result), "claimsErased": result.claims_erased}
        preview = prune_stale_preview(
            access=access, thresholds=thresholds, limit=data["limit"], cursor=data.get("cursor")
        )
        return {
            **answer,
            "asOf": preview.as_of,
            "candidateCount": preview.candidate_count,
            "nodes": [item.as_dict() for item in preview.nodes],
            "nodeIds": [item.node.pk for item in preview.nodes],
            "hasMore": preview.next_cursor is not None,
            "nextCursor": preview.next_cursor,
        }


def node_row(node: Node) -> dict[str, Any]:
    return {"nodeId": node.pk, "type": node.type, "label": node.label, "partitionKey": node.partition.key}


def orphans_json(preview: OrphanPreview) -> dict[str, Any]:
    return {
        "candidateCount": preview.candidate_count,
        "nodes": [node_row(node) for node in preview.nodes],
        "nodeIds": [node.pk for node in preview.nodes],
        "hasMore": preview.next_cursor is not None,
        "nextCursor": preview.next_cursor,
    }


OrphansOut = shape(
    "PruneOrphansOut", dryRun=flag(), candidateCount=count(**PREVIEW), nodes=many(NodeRowOut, **PREVIEW),
    nodeIds=texts(**PREVIEW), hasMore=flag(**PREVIEW), nextCursor=maybe_text(**PREVIEW), deleted=texts(**APPLIED),
    deletedCount=count(**APPLIED), skipped=many(SkippedOut, **APPLIED),
)  # fmt: skip


class PruneOrphanNodes(Endpoint):
    """Orphan nodes: no claim names them, no alias names them but their own label, no evidence stands behind
    them (never the self node, merged-away pointers or tasks). A preview (the default, needs `read`) lists
    them a page at a time; applying (`dryRun: false`, needs `maintenance`) deletes the preview's `nodeIds`
    that are still orphans, or every orphan found now when no ids are given."""

    tool = "maintenance.prune_orphan_nodes"
    request_serializer = PagedIn
    response_schema = OrphansOut

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        if not data["dryRun"]:
            return {"dryRun": False, **applied_json(prune_orphans_apply(access=access, node_ids=data.get("nodeIds")))}
        preview = prune_orphans_preview(access=access, limit=data["limit"], cursor=data.get("cursor"))
        return {"dryRun": True, **orphans_json(preview)}


class DryRunIn(RequestSerializer):
    dryRun = serializers.BooleanField(default=True, help_text="Preview (default); false applies.")


GroupOut = shape(
    "DuplicateGroupOut", type=text(), label=text(), partitionKey=text(), targetNodeId=text(), sourceNodeIds=texts(),
    claimsMoved=count(),
)  # fmt: skip
DedupOut = shape("DedupSweepOut", dryRun=flag(), groupCount=count(), merged=count(), groups=many(GroupOut))


def dedup_json(result: DedupResult, dry_run: bool) -> dict[str, Any]:
    return {
        "dryRun": dry_run,
        "groupCount": len(result.groups),
        "merged": 0 if dry_run else result.merged,
        "groups": [group.as_dict() for group in result.groups],
    }


class DedupSweep(Endpoint):
    """Exact duplicates: nodes of one partition and type whose labels are the same name (case, accents and
    spacing aside; tasks are left alone). A preview (the default, needs `read`) lists each group and the node
    it would merge into, the oldest; applying (`dryRun: false`, needs `maintenance`) merges them with the
    ordinary node merge (claims, aliases and evidence move; the others stay as pointers)."""

    tool = "cleanup.dedup_sweep"
    request_serializer = DryRunIn
    response_schema = DedupOut

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return dedup_json(dedup_sweep(access=access, dry_run=data["dryRun"]), data["dryRun"])


class CleanupIn(DryRunIn):
    recoverStatuslessCommitments = serializers.BooleanField(default=True)
    pruneOrphanNodes = serializers.BooleanField(default=True)
    dedupSweep = serializers.BooleanField(default=True)


class Cleanup(Endpoint):
    """Routine repairs in one call, in order: statusless task recovery, orphan pruning, the exact-duplicate
    sweep (each can be turned off), and on apply the claim expiry and trust-decay sweep. A dry run by default
    (needs `read`); applying needs `maintenance`. Idempotent: a second apply changes nothing."""

    tool = "cleanup"
    response_schema = shape(
        "CleanupOut", dryRun=flag(), recoverStatuslessCommitments=one(RecoveryOut, required=False),
        pruneOrphanNodes=one(shape("CleanupOrphansOut", dryRun=flag(), candidateCount=count(),
                                   nodes=many(NodeRowOut), deletedCount=count(required=False)), required=False),
        dedupSweep=one(DedupOut, required=False),
        lifecycle=one(shape("LifecycleOut", expired=count(), flaggedForReverification=count()), required=False),
    )  # fmt: skip
    request_serializer = CleanupIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        dry_run = data["dryRun"]
        result = cleanup_run(
            access=access, dry_run=dry_run, recover=data["recoverStatuslessCommitments"],
            prune_orphans=data["pruneOrphanNodes"], dedup=data["dedupSweep"],
        )  # fmt: skip
        answer: dict[str, Any] = {"dryRun": dry_run}
        if result.recovery is not None:
            answer["recoverStatuslessCommitments"] = recovery_answer(result.recovery, dry_run)
        if result.orphans is not None:
            orphans: dict[str, Any] = {
                "dryRun": dry_run,
                "candidateCount": result.orphans.candidate_count,
                "nodes": [node_row(node) for node in result.orphans.nodes],
            }
            if result.orphans_applied is not None:
                orphans["deletedCount"] = len(result.orphans_applied.deleted)
            answer["pruneOrphanNodes"] = orphans
        if result.dedup is not None:
            answer["dedupSweep"] = dedup_json(result.dedup, dry_run)
        if result.lifecycle is not None:
            answer["lifecycle"] = result.lifecycle.as_dict()
        return answer

"""Coordination and feedback over REST (seeds/004): coord_health, coord_drift_scan, coord_reconcile,
coord_curate, observation_log and stats. Stored statements come back wrapped in UNTRUSTED_DATA markers."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.openapi import (
    anything,
    count,
    flag,
    many,
    mapping,
    maybe_text,
    maybe_when,
    one,
    shape,
    text,
    texts,
    when,
)
from memory.models import Claim, FeedbackKind, Node
from memory.screening import wrap_untrusted
from memory.services import coordination
from memory.services.curation import CuratedClaim, Curation, session_curate
from memory.services.feedback import MAX_NOTE_CHARS, feedback_log


def node_ref(node: Node | None, *, with_id: bool = True) -> dict[str, Any] | None:
    if node is None:
        return None
    return {"nodeId": node.pk if with_id else None, "type": node.type, "label": node.label}


def drift_json(drift: coordination.Drift) -> dict[str, Any]:
    first = drift.claims[0]
    return {
        "type": drift.kind,
        "namespace": first.partition.key,
        "claimIds": [claim.pk for claim in drift.claims],
        "statements": [wrap_untrusted(claim.statement) for claim in drift.claims],
        "subject": node_ref(first.subject),
        "predicate": first.predicate or None,
        "key": first.key or None,
        "why": drift.why,
    }


def verdict_json(record: coordination.VerdictRecord) -> dict[str, Any]:
    meta = record.claim.meta if isinstance(record.claim.meta, dict) else {}
    return {
        "claimId": record.claim.pk,
        "statement": wrap_untrusted(record.claim.statement),
        "repo": meta.get("repo"),
        "pr": meta.get("pr"),
        "branch": meta.get("branch"),
        "verdict": record.verdict.verdict,
        "detail": record.verdict.detail,
        "resolver": record.resolver,
        "needsReverification": record.claim.needs_reverification,
        "eventId": record.event.pk,
        "checkedAt": record.event.created_at,
    }


def curated_json(item: CuratedClaim, *, dry_run: bool) -> dict[str, Any]:
    claim: Claim = item.claim
    return {
        "id": None if dry_run else claim.pk,
        "statement": wrap_untrusted(claim.statement),
        "kind": claim.kind,
        "status": claim.status,
        "origin": claim.origin,
        "predicate": claim.predicate or None,
        "value": claim.object_value,
        "subject": node_ref(claim.subject, with_id=not dry_run),
        "action": "created" if item.created else "evidenceAdded",
        "eventSequences": item.sequences,
    }


def curation_json(curation: Curation) -> dict[str, Any]:
    dry = curation.dry_run
    items = [(item, item.claim.subject is not None and item.claim.subject.type == "Task") for item in curation.claims]
    return {
        "sessionId": curation.session.pk,
        "dryRun": dry,
        "extractor": curation.extractor or None,
        "eventsRead": curation.events,
        "counts": curation.counts,
        "claims": [curated_json(item, dry_run=dry) for item, task in items if not task],
        "tasks": [curated_json(item, dry_run=dry) for item, task in items if task],
        "sourceId": curation.source_id or None,
        "operationId": curation.operation_id or None,
    }


CountsOut = serializers.DictField(child=serializers.IntegerField())
RefOut = shape("CoordNodeRefOut", nodeId=maybe_text(), type=text(), label=text())
NamespaceHealthOut = shape(
    "NamespaceHealthOut",
    namespace=text(), label=text(allow_blank=True), isActive=flag(),
    claims=one(shape("HealthClaimsOut", active=count(), byKind=mapping(), byOrigin=mapping())),
    keyedMemories=count(), handoffs=count(), quarantined=count(), needsReverification=count(),
    sessions=one(shape("HealthSessionsOut", total=count(), uncurated=count(), activeLast24h=count())),
    staleness=one(shape(
        "StalenessOut", lastWriteAt=maybe_when(), daysSinceLastWrite=count(allow_null=True),
        staleInferences=count(), reverifyAfterDays=count(),
    )),
)  # fmt: skip
DriftOut = shape(
    "DriftOut", type=text(), namespace=text(), claimIds=texts(), statements=texts(),
    subject=one(RefOut, allow_null=True), predicate=maybe_text(), key=maybe_text(), why=text(),
)  # fmt: skip
VerdictOut = shape(
    "VerdictOut", claimId=text(), statement=text(), repo=anything(allow_null=True), pr=anything(allow_null=True),
    branch=anything(allow_null=True), verdict=text(), detail=text(allow_blank=True), resolver=text(),
    needsReverification=flag(), eventId=text(), checkedAt=when(),
)  # fmt: skip
CuratedOut = shape(
    "CuratedOut", id=maybe_text(), statement=text(), kind=text(), status=text(), origin=text(),
    predicate=maybe_text(), value=anything(allow_null=True), subject=one(RefOut, allow_null=True),
    action=serializers.ChoiceField(choices=["created", "evidenceAdded"]), eventSequences=anything(),
)  # fmt: skip


class DriftScanIn(RequestSerializer):
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


class ReconcileIn(RequestSerializer):
    claimId = serializers.CharField(max_length=40, required=False)
    limit = serializers.IntegerField(default=20, min_value=1, max_value=100)


class CurateIn(RequestSerializer):
    sessionId = serializers.CharField(max_length=40)
    dryRun = serializers.BooleanField(default=True)


class ObservationLogIn(RequestSerializer):
    kind = serializers.ChoiceField(choices=FeedbackKind.values)
    note = serializers.CharField(max_length=MAX_NOTE_CHARS)
    tool = serializers.CharField(max_length=64, required=False, default="", allow_blank=True)
    claimId = serializers.CharField(max_length=40, required=False, default="", allow_blank=True)
    sourceId = serializers.CharField(max_length=40, required=False, default="", allow_blank=True)
    eventId = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class CoordHealth(Endpoint):
    """Per namespace in reach: active claims by kind and origin, keyed memories, quarantined and flagged
    claims, sessions, handoffs, and staleness (last write, old inferences without newer evidence)."""

    tool = "coord.health"
    response_schema = shape("HealthOut", namespaces=many(NamespaceHealthOut), asOf=when())

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return coordination.coordination_health(access)


class CoordDriftScan(Endpoint):
    """What has drifted: contradicting claims about one subject and claims flagged for reverification, each
    with why."""

    tool = "coord.drift-scan"
    response_schema = shape("DriftScanOut", items=many(DriftOut))
    request_serializer = DriftScanIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"items": [drift_json(drift) for drift in coordination.drift_scan(access, limit=data["limit"])]}


class CoordReconcile(Endpoint):
    """Check claims whose meta names a `repo` and a `pr` or `branch` against GitHub (needs `write`) and record
    a verdict: `current`, `stale` (the claim is flagged for reverification) or `unverifiable` (no access, or
    nothing to go on). Without `claimId`, the least recently checked claims of the partition first."""

    tool = "coord.reconcile"
    response_schema = shape("ReconcileOut", verdicts=many(VerdictOut))
    request_serializer = ReconcileIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        records = coordination.claims_reconcile(access=access, claim_id=data.get("claimId"), limit=data["limit"])
        return {"verdicts": [verdict_json(record) for record in records]}


class CoordCurate(Endpoint):
    """Consolidate an agent session into claims and tasks through the configured extractor and the steward's
    policy (needs `write`). `dryRun` (default true) answers what would be stored and stores nothing; applying
    again adds nothing, and later events are curated by the next run."""

    tool = "coord.curate"
    response_schema = shape(
        "CurationOut", sessionId=text(), dryRun=flag(), extractor=maybe_text(), eventsRead=count(), counts=mapping(),
        claims=many(CuratedOut), tasks=many(CuratedOut), sourceId=maybe_text(), operationId=maybe_text(),
    )  # fmt: skip
    request_serializer = CurateIn
    example_request = {"sessionId": "ses_01kq54zhdye4a94mjmw0wev9jx"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return curation_json(session_curate(access=access, session_id=data["sessionId"], dry_run=data["dryRun"]))


class ObservationLog(Endpoint):
    """Report something about memory itself: a missing, wrong or stale memory, a bug, a suggestion (needs
    `write`). `eventId` makes it exactly-once."""

    tool = "observation.log"
    response_schema = shape("FeedbackAckOut", id=text(), verified_persisted=flag(), deduplicated=flag())
    request_serializer = ObservationLogIn
    example_request = {"kind": "missing_memory", "note": "The user's new office address was not remembered."}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        ack = feedback_log(
            access=access, kind=data["kind"], note=data["note"], tool=data["tool"], claim_id=data["claimId"],
            source_id=data["sourceId"], event_id=data["eventId"],
        )  # fmt: skip
        return ack.as_dict()


class Stats(Endpoint):
    """Counts of the memory in reach: sources, claims, nodes, open commitments, metrics, artifacts, and calls
    of the last 24 hours by surface."""

    tool = "stats"
    response_schema = shape(
        "StatsOut", namespaces=texts(), sources=CountsOut, claims=CountsOut, nodes=CountsOut,
        openCommitments=one(shape("OpenCountsOut", total=count(), trusted=count(), candidate=count())),
        metrics=one(shape("MetricCountsOut", definitions=count(), observations=count())),
        artifacts=one(shape("ArtifactCountsOut", count=count(), bytes=count())), toolEventsLast24h=CountsOut,
        asOf=when(),
    )  # fmt: skip

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return coordination.memory_stats(access)

"""Coordination (seeds/004): how healthy each namespace's memory is, what has drifted, which repository-backed
claims still hold, and plain counts of everything in reach.

Reads count with aggregate queries (a fixed number of statements, whatever the size of the memory). Verdicts of
coord_reconcile are MemoryEvents (`claim.verdict`): the audit trail is append-only by construction, so every
verdict stays on record; a `stale` verdict also flags the claim `needs_reverification`, so drift scans and
reviews pick it up.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, Max, OuterRef, Q, Subquery, Sum
from django.utils import timezone

from memory.access import Access
from memory.errors import Conflict
from memory.models import (
    AgentSession,
    Blob,
    Claim,
    ClaimKind,
    ClaimStatus,
    MemoryEvent,
    Node,
    Partition,
    Scope,
    Source,
    SourceKind,
    ToolEvent,
    vector_fields,
)
from memory.selectors import claim_for_access
from memory.services.audit import audit_record
from memory.services.lifecycle import decayed_inference
from memory.services.reconcile import SINGLE_VALUED
from memory.services.resolvers import RepoRef, Resolver, Verdict, configured_resolver
from memory.services.sessions import HANDOFF_PREFIX

VERDICT_ACTION = "claim.verdict"
_RECONCILABLE = (ClaimStatus.ACTIVE, ClaimStatus.SUGGESTED)
_TOTALS = ("keyed", "handoffs", "quarantined", "flagged", "decayed")  # coordination_health's counts per partition


def coordination_health(access: Access, *, now: datetime | None = None) -> dict[str, Any]:
    """Per partition in reach: active claims by kind and origin, keyed memories, quarantined and flagged
    claims, sessions and handoffs, and how stale it is. Three queries, however many rows."""
    access.require_scope(Scope.READ)
    now = now or timezone.now()
    partitions = access.read_partitions
    claims = Claim.objects.filter(owner=access.user, partition__in=partitions)
    active = Q(status=ClaimStatus.ACTIVE)
    # One scan of the claims: counted by partition, kind and origin, each total then summed over kinds and origins.
    counted = list(
        claims.values("partition_id", "kind", "origin")
        .annotate(
            active=Count("id", filter=active),
            keyed=Count("id", filter=active & ~Q(key="")),
            handoffs=Count("id", filter=active & Q(kind=ClaimKind.HANDOFF, key__startswith=HANDOFF_PREFIX)),
            quarantined=Count("id", filter=Q(status=ClaimStatus.QUARANTINED)),
            flagged=Count("id", filter=active & Q(needs_reverification=True)),
            decayed=Count("id", filter=decayed_inference(now)),
        )
        .order_by()
    )
    grouped = _grouped((row["partition_id"], row["kind"], row["origin"], row["active"]) for row in counted)
    totals: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for row in counted:
        totals[row["partition_id"]].update({name: row[name] for name in _TOTALS})
    # Curated through its last event: the session's source (memory.services.curation) has read that event.
    curated = Source.objects.filter(
        parent__owner=OuterRef("owner"), parent__partition=OuterRef("partition"), parent__kind=SourceKind.SESSION,
        parent__external_id=OuterRef("pk"), parent__tombstoned_at__isnull=True, ordinal=OuterRef("last_sequence"),
        extracted_at__isnull=False,
    )  # fmt: skip
    sessions = {
        row["partition_id"]: row
        for row in AgentSession.objects.filter(owner=access.user, partition__in=partitions)
        .values("partition_id")
        .annotate(
            total=Count("id"),
            uncurated=Count("id", filter=Q(last_sequence__gt=0) & ~Exists(curated)),
            active_day=Count("id", filter=Q(updated_at__gte=now - timedelta(days=1))),
            last=Max("updated_at"),
        )
        .order_by()
    }
    # Every change to memory is audited; session appends are not, so their sessions' times count too. Each
    # partition's newest change from the end of its own (memoryevent_partition_recent), not a scan of every change.
    # By the partition alone (the owner's: read_partitions): with the owner too, the planner may walk the owner's
    # whole trail for it, which for a partition without changes reads every change (2.7 s at 1.6 million).
    newest = MemoryEvent.objects.filter(partition=OuterRef("pk")).order_by("-created_at")
    writes = dict(
        Partition.objects.filter(pk__in=[partition.pk for partition in partitions])
        .annotate(last=Subquery(newest.values("created_at")[:1]))
        .values_list("pk", "last")
    )
    namespaces = []
    for partition in partitions:
        total, session = totals[partition.pk], sessions.get(partition.pk, {})
        moments = [moment for moment in (writes.get(partition.pk), session.get("last")) if moment]
        last_write = max(moments) if moments else None
        by_kind, by_origin = grouped[partition.pk]
        namespaces.append({
            "namespace": partition.key,
            "label": partition.label,
            "isActive": partition.is_active,
            "claims": {"active": sum(by_kind.values()), "byKind": by_kind, "byOrigin": by_origin},
            "keyedMemories": total.get("keyed", 0),
            "handoffs": total.get("handoffs", 0),
            "quarantined": total.get("quarantined", 0),
            "needsReverification": total.get("flagged", 0),
            "sessions": {
                "total": session.get("total", 0),
                "uncurated": session.get("uncurated", 0),
                "activeLast24h": session.get("active_day", 0),
            },
            "staleness": {
                "lastWriteAt": last_write,
                "daysSinceLastWrite": (now - last_write).days if last_write else None,
                "staleInferences": total.get("decayed", 0),
                "reverifyAfterDays": settings.REVERIFY_AFTER_DAYS,
            },
        })  # fmt: skip
    return {"namespaces": namespaces, "asOf": now}


def _grouped(rows: Any) -> defaultdict[str, tuple[dict[str, int], dict[str, int]]]:
    """Rows of (partition_id, kind, origin, n) as {partition_id: (by kind, by origin)}, leaving out n = 0."""
    grouped: defaultdict[str, tuple[dict[str, int], dict[str, int]]] = defaultdict(lambda: ({}, {}))
    for partition_id, kind, origin, n in rows:
        if not n:
            continue
        by_kind, by_origin = grouped[partition_id]
        by_kind[kind] = by_kind.get(kind, 0) + n
        by_origin[origin] = by_origin.get(origin, 0) + n
    return grouped


@dataclass(frozen=True)
class Drift:
    """Something a reviewer should look at: what kind of drift, the claims involved, and why."""

    kind: str  # contradiction | needs_reverification
    claims: list[Claim]
    why: str


def drift_scan(access: Access, *, limit: int = 50) -> list[Drift]:
    """Contradictions (active claims giving a one-valued predicate of one subject different values) and claims
    flagged for reverification, in that order, at most `limit` items. Four queries at most. (A key with two
    current values cannot happen: the database allows one, see claim_one_current_value_per_key.)"""
    access.require_scope(Scope.READ)
    active = Claim.objects.filter(owner=access.user, partition__in=access.read_partitions, status=ClaimStatus.ACTIVE)
    active = active.select_related("subject", "partition").defer(*vector_fields())
    found = _contradictions(active, limit)
    if len(found) < limit:
        found += _flagged(access, active, limit - len(found))
    return found


def _contradictions(active: Any, limit: int) -> list[Drift]:
    groups = list(
        active.filter(predicate__in=SINGLE_VALUED, subject__isnull=False)
        .values_list("subject_id", "predicate")
        .annotate(
            n=Count("id"),
            nodes=Count("object_node", distinct=True),
            values=Count("object_value", distinct=True),
        )
        .filter(Q(nodes__gt=1) | Q(values__gt=1) | Q(nodes__gte=1, values__gte=1))
        .order_by("subject_id", "predicate")[:limit]
    )
    if not groups:
        return []
    members: dict[tuple[str, str], list[Claim]] = defaultdict(list)
    rows = active.filter(subject_id__in={group[0] for group in groups}, predicate__in={group[1] for group in groups})
    for claim in rows.order_by("recorded_at", "id"):
        members[(claim.subject_id, claim.predicate)].append(claim)
    found = []
    for subject_id, predicate, *_ in groups:
        claims = members[(subject_id, predicate)]
        values = {(c.object_node_id, json.dumps(c.object_value, sort_keys=True)) for c in claims}
        if len(values) > 1:
            why = f"{predicate} takes one value, but {len(claims)} active claims about this subject give {len(values)}."
            found.append(Drift("contradiction", claims, why))
    return found


def _flagged(access: Access, active: Any, limit: int) -> list[Drift]:
    claims = list(active.filter(needs_reverification=True).order_by("stated_at", "id")[:limit])
    verdicts = latest_verdicts(access, [claim.pk for claim in claims])
    found = []
    for claim in claims:
        verdict = verdicts.get(claim.pk)
        if verdict and verdict.get("verdict") == "stale":
            why = f"coord_reconcile found it stale: {verdict.get('detail', '')}"
        else:
            why = f"Inferred, and no newer evidence confirmed it within {settings.REVERIFY_AFTER_DAYS} days."
        found.append(Drift("needs_reverification", [claim], why))
    return found


def latest_verdicts(access: Access, claim_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The newest recorded verdict of each claim (its `after` summary), in one query."""
    if not claim_ids:
        return {}
    events = (
        MemoryEvent.objects.filter(owner=access.user, action=VERDICT_ACTION, target_type="claim")
        .filter(target_id__in=claim_ids, erased_at__isnull=True)
        .order_by("target_id", "-created_at", "-id")
        .distinct("target_id")
    )
    return {event.target_id: dict(event.after or {}) for event in events}


@dataclass(frozen=True)
class VerdictRecord:
    claim: Claim
    verdict: Verdict
    resolver: str
    event: MemoryEvent


def claims_reconcile(
    *, access: Access, claim_id: str | None = None, limit: int = 20, resolver: Resolver | None = None
) -> list[VerdictRecord]:
    """Check claims whose meta names a repo and a PR or branch, and record a verdict for each (needs `write`).
    With `claim_id`, that claim; otherwise up to `limit` of the strict partition's, least recently checked
    first. The resolver is asked outside any transaction (it may wait on the network); each verdict is
    then recorded in its own short one."""
    access.require_scope(Scope.WRITE)
    resolver = resolver or configured_resolver()
    if claim_id:
        claim = claim_for_access(access, claim_id)
        access.check_write(claim.partition)
        if RepoRef.from_meta(claim.meta) is None or claim.status not in _RECONCILABLE:
            raise Conflict(
                "Only current claims whose meta names a repo and a pr or branch can be reconciled.",
                details={"claimId": claim_id, "status": claim.status},
            )
        targets = [claim]
    else:
        targets = _reconcilable(access, limit)
    records = []
    for claim in targets:
        verdict = resolver.resolve(claim)
        if (record := _record_verdict(access, claim, verdict, resolver.name)) is not None:
            records.append(record)
    return records


def _reconcilable(access: Access, limit: int) -> list[Claim]:
    last_checked = MemoryEvent.objects.filter(
        owner=access.user, action=VERDICT_ACTION, target_type="claim", target_id=OuterRef("pk")
    ).order_by("-created_at")
    return list(
        Claim.objects.select_related("partition")
        .filter(owner=access.user, partition=access.write_partition(), status__in=_RECONCILABLE)
        .filter(meta__has_key="repo")
        .filter(Q(meta__has_key="pr") | Q(meta__has_key="branch"))
        .annotate(last_checked=Subquery(last_checked.values("created_at")[:1]))
        .order_by(F("last_checked").asc(nulls_first=True), "id")[:limit]
    )


@transaction.atomic
def _record_verdict(access: Access, claim: Claim, verdict: Verdict, resolver: str) -> VerdictRecord | None:
    """Append the verdict to the audit trail; `stale` flags the claim for reverification. None if the claim
    was erased while it was being checked."""
    locked = Claim.objects.select_for_update().filter(pk=claim.pk, owner=access.user).first()
    if locked is None:
        return None
    before = locked.needs_reverification
    if verdict.verdict == "stale" and not before:
        locked.needs_reverification = True
        locked.save(update_fields=["needs_reverification", "updated_at"])
    event = audit_record(
        actor=access.actor, owner=access.user, action=VERDICT_ACTION, target=locked, partition=claim.partition,
        before={"needsReverification": before},
        after={"verdict": verdict.verdict, "detail": verdict.detail, "resolver": resolver,
               "needsReverification": locked.needs_reverification},
    )  # fmt: skip
    locked.partition = claim.partition
    return VerdictRecord(claim=locked, verdict=verdict, resolver=resolver, event=event)


def memory_stats(access: Access, *, now: datetime | None = None) -> dict[str, Any]:
    """Counts of everything in reach: sources by kind, claims by status, nodes by type, open commitments,
    metrics and observations, artifacts and their bytes, and calls of the last 24 hours by surface."""
    from commitments.selectors import open_commitments
    from metrics.models import MetricDefinition, Observation

    access.require_scope(Scope.READ)
    now = now or timezone.now()
    mine = {"owner": access.user, "partition__in": access.read_partitions}
    sources = Source.objects.filter(**mine, tombstoned_at__isnull=True, identity_retired_at__isnull=True)
    nodes = Node.objects.filter(**mine, merged_into__isnull=True)
    tasks = open_commitments(access, provenance="all")
    placed = Blob.objects.filter(owner=access.user, placements__partition__in=access.read_partitions)
    artifacts = Blob.objects.filter(pk__in=placed.values("pk")).aggregate(n=Count("id"), size=Sum("size"))
    keys = [partition.key for partition in access.read_partitions]
    calls = ToolEvent.objects.filter(owner=access.user, partition_key__in=keys, created_at__gte=now - timedelta(days=1))
    definitions = MetricDefinition.objects.filter(**mine)
    return {
        "namespaces": keys,
        "sources": _by(sources, "kind"),
        "claims": _by(Claim.objects.filter(**mine), "status"),
        "nodes": _by(nodes, "type"),
        "openCommitments": {
            "total": len(tasks),
            "trusted": sum(1 for task in tasks if task.trusted),
            "candidate": sum(1 for task in tasks if not task.trusted),
        },
        "metrics": {
            "definitions": definitions.count(),
            # By their metrics' ids: an index-only count of observation_series (a join read every reading's row).
            "observations": Observation.objects.filter(definition__in=definitions.values("pk")).count(),
        },
        "artifacts": {"count": artifacts["n"], "bytes": artifacts["size"] or 0},
        "toolEventsLast24h": _by(calls, "surface"),
        "asOf": now,
    }


def _by(rows: Any, field: str) -> dict[str, int]:
    # COUNT(*), not COUNT(id): it lets PostgreSQL count from an index alone where one holds the field (claims by
    # status: claim_reach), never reading the rows.
    return dict(rows.values_list(field).annotate(n=Count("*")).order_by(field))

"""Reads for the web dashboard and source pages: how much is in the memory, what waits for a decision, what
changed lately, what the pipeline is working on and what a source produced, all in the partitions the request
reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from commitments.selectors import open_commitments
from memory.access import Access
from memory.models import (
    Claim,
    ClaimStatus,
    Evidence,
    MemoryEvent,
    Operation,
    OperationStatus,
    Scope,
    Source,
    vector_fields,
)
from metrics.selectors import definitions_in_reach


@dataclass(frozen=True)
class DashboardCounts:
    claims: dict[str, int]  # every ClaimStatus, zero included
    sources: int
    open_commitments: int
    review: dict[str, int]  # suggested, quarantined, candidate tasks, metrics needing review

    @property
    def waiting_for_review(self) -> int:
        return sum(self.review.values())


def dashboard_counts(access: Access) -> DashboardCounts:
    """Counts for the dashboard. Sources are the top-level, not deleted ones (as the source list shows them);
    open commitments are the trusted band; the review queue holds suggested and quarantined claims, open
    candidate-band tasks and metric definitions created next to a similar one."""
    access.require_scope(Scope.READ)
    by_status = dict(
        Claim.objects.filter(owner=access.user, partition__in=access.read_partitions)
        .values_list("status")
        .annotate(n=Count("*"))  # not Count("id"): counted from claim_reach alone, the rows never read
        .values_list("status", "n")
    )
    claims = {status.value: int(by_status.get(status.value, 0)) for status in ClaimStatus}
    sources = Source.objects.filter(
        owner=access.user,
        partition__in=access.read_partitions,
        identity_retired_at__isnull=True,
        tombstoned_at__isnull=True,
        parent__isnull=True,
    ).count()
    review = {
        "suggested": claims[ClaimStatus.SUGGESTED],
        "quarantined": claims[ClaimStatus.QUARANTINED],
        "candidateTasks": len(open_commitments(access, provenance="candidate")),
        "metrics": definitions_in_reach(access).filter(needs_review=True).count(),
    }
    return DashboardCounts(
        claims=claims,
        sources=sources,
        open_commitments=len(open_commitments(access)),
        review=review,
    )


def recent_events(access: Access, *, limit: int = 12) -> list[MemoryEvent]:
    """The latest changes to the memory (audit events) in the partitions this request reads, newest first."""
    access.require_scope(Scope.READ)
    events = MemoryEvent.objects.filter(owner=access.user, erased_at__isnull=True).filter(
        Q(partition__in=access.read_partitions) | Q(partition__isnull=True)
    )
    latest = list(events.select_related("partition").order_by("-created_at", "-id")[:limit])
    # What a claim says reads better than its id; one query for all of them (erased ones keep their id).
    claim_ids = [event.target_id for event in latest if event.target_type == "claim"]
    statements = dict(Claim.objects.filter(owner=access.user, pk__in=claim_ids).values_list("id", "statement"))
    for event in latest:
        event.label = statements.get(event.target_id, event.target_id)  # type: ignore[attr-defined]
    return latest


def recent_operations(access: Access, *, limit: int = 10) -> list[Operation]:
    """The processing queue: what is queued or running, then the latest finished runs, newest first."""
    access.require_scope(Scope.READ)
    operations = Operation.objects.filter(owner=access.user, partition__in=access.read_partitions).select_related(
        "source", "partition"
    )
    running = list(
        operations.filter(status__in=[OperationStatus.QUEUED, OperationStatus.PROCESSING]).order_by("-queued_at")[
            :limit
        ]
    )
    done = operations.exclude(pk__in=[op.pk for op in running]).order_by("-queued_at", "-id")
    return running + list(done[: max(limit - len(running), 0)])


def source_operations(access: Access, source: Source) -> list[Operation]:
    """The processing runs of a source (every version of it), newest first."""
    access.require_scope(Scope.READ)
    return list(
        Operation.objects.filter(owner=access.user, source__partition__in=access.read_partitions)
        .filter(source__in=_with_messages(source))
        .select_related("source")
        .order_by("-queued_at", "-id")[:20]
    )


def source_claims(access: Access, source: Source, *, limit: int = 200) -> list[Claim]:
    """The claims with evidence in this source or its messages (what erasing the source removes)."""
    access.require_scope(Scope.READ)
    evidence = Evidence.objects.filter(source__in=_with_messages(source)).values("claim_id")
    claims = Claim.objects.filter(owner=access.user, partition__in=access.read_partitions, pk__in=evidence)
    return list(claims.defer(*vector_fields()).order_by("status", "-id")[:limit])


def _with_messages(source: Source) -> QuerySet[Source, Any]:
    """The source and its messages, as a subquery: the rows that point at either are then found by their own index
    (a condition on the source's parent across a join read every evidence row: 31 ms at 100,000 claims)."""
    return Source.objects.filter(Q(pk=source.pk) | Q(parent=source)).values("pk")


def source_messages(source: Source) -> list[Source]:
    """A conversation's messages in order (same version as the conversation)."""
    return list(source.children.filter(tombstoned_at=source.tombstoned_at).order_by("ordinal"))

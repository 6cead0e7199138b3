"""Reads for the review queue (SPEC §10): everything waiting for the person's decision, and the decisions
taken lately, each with an undo while it can still be taken back. Kept apart from memory/selectors.py, which
reads one kind each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch

from memory.access import Access
from memory.models import Claim, ClaimStatus, Evidence, MemoryEvent, Scope, vector_fields
from memory.screening import quarantine_reason
from memory.selectors import current_revision
from memory.services.review import DECISIONS, latest_decision

LIMIT = 50


@dataclass(frozen=True)
class Decided:
    """A decision taken lately; `undoable` while review_undo can still take it back."""

    event: MemoryEvent
    claim: Claim | None
    undoable: bool


@dataclass(frozen=True)
class Quarantined:
    claim: Claim
    reason: str


@dataclass(frozen=True)
class ReviewQueue:
    suggestions: list[Claim]
    quarantined: list[Quarantined]
    tasks: list[Any]  # commitments.selectors.OpenTask
    metrics: list[Any]  # metrics.models.MetricDefinition
    counts: dict[str, int] = field(default_factory=dict)


def _claims(access: Access, status: str) -> tuple[list[Claim], int]:
    """The newest LIMIT claims of this status (deciding them brings the next ones up) and how many there are."""
    waiting = Claim.objects.filter(owner=access.user, partition__in=access.read_partitions, status=status)
    claims = (
        waiting.select_related("partition", "subject", "object_node", "conflicts_with", "conflicts_with__subject")
        .prefetch_related(
            Prefetch("evidence", queryset=Evidence.objects.select_related("source").order_by("id")),
            Prefetch("conflicts_with__evidence", queryset=Evidence.objects.select_related("source").order_by("id")),
        )
        .defer(*vector_fields("conflicts_with"))
    )
    newest = list(claims.order_by("-recorded_at", "-id")[:LIMIT])
    for claim in newest:  # beside the claim as it reads now, when it was corrected since
        if claim.conflicts_with is not None and claim.conflicts_with.status == ClaimStatus.SUPERSEDED:
            claim.conflicts_with = current_revision(claim.conflicts_with)
    return newest, len(newest) if len(newest) < LIMIT else waiting.count()


def review_queue(access: Access) -> ReviewQueue:
    """Suggested claims (with the active claim each conflicts with), quarantined writes (with why), candidate
    tasks, and metrics flagged as near-duplicates, in the partitions this request reads."""
    from commitments.selectors import open_commitments
    from metrics.selectors import definitions_with_stats

    access.require_scope(Scope.READ)
    metrics = definitions_with_stats(access, needs_review=True)
    review_tasks = {definition.review_task_id for definition in metrics}
    # A metric's own "Review metric …" task is decided with the metric, not twice.
    tasks = [item for item in open_commitments(access, provenance="candidate") if item.task.pk not in review_tasks]
    held, held_count = _claims(access, ClaimStatus.QUARANTINED)
    quarantined = [Quarantined(claim, quarantine_reason(claim.origin, claim.statement)) for claim in held]
    suggestions, suggestion_count = _claims(access, ClaimStatus.SUGGESTED)
    counts = {"suggestions": suggestion_count, "quarantined": held_count, "tasks": len(tasks),
              "metrics": len(metrics)}  # fmt: skip
    return ReviewQueue(suggestions, quarantined, tasks, metrics, counts)


def review_decisions(access: Access, *, limit: int = 10) -> list[Decided]:
    """The latest decisions on suggested claims, newest first, each with whether it can still be taken back."""
    access.require_scope(Scope.READ)
    events = list(
        MemoryEvent.objects.filter(
            owner=access.user, partition__in=access.read_partitions, action__in=DECISIONS, erased_at__isnull=True
        ).order_by("-created_at", "-id")[:limit]
    )
    claims = Claim.objects.filter(owner=access.user, pk__in=[event.target_id for event in events]).in_bulk()
    return [
        Decided(event, claim, undoable=claim is not None and getattr(latest_decision(claim), "pk", None) == event.pk)
        for event in events
        for claim in [claims.get(event.target_id)]
    ]

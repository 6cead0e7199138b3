"""Erasing metrics (issue 15): observations (some, or a time range of one metric) and whole definitions.

An observation read from a message carries the message's words twice: its note and its reading claim. Both
go with it, and the Event node made for the moment when nothing else is said about it. The message itself
stays (erase the source for that; a re-extraction would otherwise read the number again).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Q, QuerySet

from memory.access import Access
from memory.errors import NotFound, ValidationFailed
from memory.models import Claim, Node, NodeType, Partition, Scope
from memory.services.audit import audit_erase_target, audit_record
from memory.services.claim_erasure import claims_erase
from metrics.models import MetricDefinition, Observation
from metrics.selectors import definition_for_access, definitions_in_reach

MAX_IDS = 1000


@dataclass(frozen=True)
class ObservationErasure:
    observations: int
    claims: int
    dry_run: bool


@dataclass(frozen=True)
class DefinitionErasure:
    metric_id: str
    slug: str
    observations: int
    claims: int
    dry_run: bool


def _erase_observations(access: Access, observations: QuerySet[Observation]) -> tuple[int, int]:
    """Delete these observations, their reading claims and the Event nodes nothing else is about."""
    rows = list(observations.values_list("pk", "claim_id", "event_id"))
    claim_ids = {claim for _, claim, _ in rows if claim}
    events = {event for _, _, event in rows if event}
    for observation_id, _, _ in rows:
        audit_erase_target(owner=access.user, target_type="observation", target_id=observation_id)
    Observation.objects.filter(pk__in=[pk for pk, _, _ in rows]).delete()
    claims = claims_erase(owner=access.user, claim_ids=claim_ids)
    talked_about = {
        *Claim.objects.filter(subject_id__in=events).values_list("subject_id", flat=True),
        *Claim.objects.filter(object_node_id__in=events).values_list("object_node_id", flat=True),
        *Observation.objects.filter(event_id__in=events).values_list("event_id", flat=True),
    }
    lonely = Node.objects.filter(owner=access.user, pk__in=events - talked_about, type=NodeType.EVENT)
    for node_id in lonely.values_list("pk", flat=True):
        audit_erase_target(owner=access.user, target_type="node", target_id=node_id)
    lonely.delete()
    return len(rows), claims


@transaction.atomic
def observations_erase(
    *,
    access: Access,
    observation_ids: list[str] | None = None,
    metric_id: str = "",
    slug: str = "",
    start: datetime | None = None,
    end: datetime | None = None,
    dry_run: bool = True,
) -> ObservationErasure:
    """Erase observations (needs `edit`): by id, or those of one metric in [start, end) (either bound may be
    open). With `dry_run`, only count them. Ids out of reach are NOT_FOUND, as if they did not exist."""
    access.require_scope(Scope.EDIT)
    definitions = definitions_in_reach(access)
    if observation_ids:
        if metric_id or slug or start or end:
            raise ValidationFailed(
                "Name observations by id, or a metric and a time range, not both.",
                details={"observationIds": ["Not with metricId, slug, from or to."]},
            )
        ids = sorted(set(observation_ids))
        observations = Observation.objects.filter(pk__in=ids, definition__in=definitions)
        missing = sorted(set(ids) - set(observations.values_list("pk", flat=True)))
        if missing:
            raise NotFound("No such observation.", details={"observationIds": missing})
    elif metric_id or slug:
        definition = definition_for_access(access, metric_id=metric_id or None, slug=slug or None)
        observations = Observation.objects.filter(definition=definition)
        if start is not None:
            observations = observations.filter(occurred_at__gte=start)
        if end is not None:
            observations = observations.filter(occurred_at__lt=end)
    else:
        raise ValidationFailed(
            "Name the observations: observationIds, or metricId (or slug) with an optional from / to.",
            details={"observationIds": ["Or metricId / slug."]},
        )
    if dry_run:
        return ObservationErasure(observations=observations.count(), claims=0, dry_run=True)
    partitions = list(Partition.objects.filter(metrics__observations__in=observations).distinct()[:2])
    erased, claims = _erase_observations(access, observations)
    if erased:
        audit_record(
            actor=access.actor, owner=access.user, action="metric.observations_erase", target_type="observation",
            target_id="", partition=partitions[0] if len(partitions) == 1 else None,
            after={"observations": erased, "claims": claims},
        )  # fmt: skip
    return ObservationErasure(observations=erased, claims=claims, dry_run=False)


@transaction.atomic
def metric_definition_erase(
    *, access: Access, metric_id: str = "", slug: str = "", dry_run: bool = True
) -> DefinitionErasure:
    """Erase a metric (needs `edit`): its definition, every observation with its reading claim, and the
    "Review metric" task made when it looked like another. With `dry_run`, only count."""
    access.require_scope(Scope.EDIT)
    if not (metric_id or slug):
        raise ValidationFailed("Name the metric: metricId or slug.", details={"metricId": ["Or slug."]})
    definition = definition_for_access(access, metric_id=metric_id or None, slug=slug or None)
    observations = Observation.objects.filter(definition=definition)
    if dry_run:
        return DefinitionErasure(definition.pk, definition.slug, observations.count(), 0, dry_run=True)
    definition = MetricDefinition.objects.select_for_update().get(pk=definition.pk)
    erased, claims = _erase_observations(access, observations)
    if definition.review_task_id:
        about = set(
            Claim.objects.filter(
                Q(subject_id=definition.review_task_id) | Q(object_node_id=definition.review_task_id)
            ).values_list("pk", flat=True)
        )
        claims += claims_erase(owner=access.user, claim_ids=about)
        audit_erase_target(owner=access.user, target_type="node", target_id=definition.review_task_id)
        Node.objects.filter(pk=definition.review_task_id).delete()
    audit_erase_target(owner=access.user, target_type="metricdefinition", target_id=definition.pk)
    MetricDefinition.objects.filter(resembles=definition).update(resembles=None)
    partition, definition_id, definition_slug = definition.partition, definition.pk, definition.slug
    definition.delete()
    audit_record(
        actor=access.actor, owner=access.user, action="metric.erase", target_type="metricdefinition",
        target_id=definition_id, partition=partition, after={"observations": erased, "claims": claims},
    )  # fmt: skip
    return DefinitionErasure(definition_id, definition_slug, erased, claims, dry_run=False)

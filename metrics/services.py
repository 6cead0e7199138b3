"""Recording observations, and finding the metric they belong to without making duplicates.

A definition is found by its exact slug first. A new slug is compared with the existing definitions by the
embedding of its card (label, unit, description): at `METRIC_SIMILARITY_PERCENT` or more it is still created,
since the user may mean a different thing, but with `needs_review` and a candidate Task ("Review metric …")
in the commitments views, where the user confirms or dismisses it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils.text import slugify
from pgvector.django import CosineDistance

from commitments.services import task_create
from memory.access import Access, Actor
from memory.errors import Conflict, ValidationFailed
from memory.models import Claim, ClaimOrigin, Node, NodeType, Partition, Scope, Source, User
from memory.moments import is_plausible
from memory.services.audit import audit_record, memory_changed
from metrics.models import Aggregation, MetricDefinition, Observation

logger = logging.getLogger("memory.metrics")
# Sensible aggregation for metrics whose slug says what they are.
SUMMED = ("steps", "distance", "calories", "minutes", "duration")
MAX_BULK = 1000
LARGEST = 1e15  # sums of many readings must stay finite (the REST serializers hold the same bound)


def normalize_slug(slug: str) -> str:
    """ "Body-Weight" and "body weight" are `body_weight`: every write and read finds a metric this way."""
    return slugify(slug).replace("-", "_")


def default_aggregation(slug: str) -> str:
    return Aggregation.SUM if any(word in slug for word in SUMMED) else Aggregation.MEAN


def _embed(text: str) -> tuple[list[float] | None, str]:
    from memory.embeddings import EmbedderUnavailable, get_embedder

    try:
        embedder = get_embedder()
        return embedder.embed_documents([text])[0], embedder.model_id
    except EmbedderUnavailable as exc:
        logger.warning("metrics.embedder_unavailable", extra={"reason": str(exc)})
        return None, ""


Embed = Callable[[str], tuple[list[float] | None, str]]


def definition_card(*, slug: str, label: str = "", unit: str = "", description: str = "") -> str:
    """The card a new definition is compared by (`MetricDefinition.card`), before it exists."""
    slug = normalize_slug(slug)
    return MetricDefinition(
        slug=slug, label=label or slug.replace("_", " ").capitalize(), unit=unit, description=description
    ).card


@dataclass(frozen=True)
class Resolved:
    definition: MetricDefinition
    created: bool


def definition_resolve(
    *,
    owner: User,
    partition: Partition,
    slug: str,
    actor: Actor,
    label: str = "",
    unit: str = "",
    description: str = "",
    aggregation: str = "",
    embed: Embed = _embed,
) -> Resolved:
    """The definition for `slug`, created if new (flagged for review when it resembles an existing one).
    `embed` gives the card's vector; the pipeline passes vectors it embedded before taking its locks."""
    slug = normalize_slug(slug)
    if not slug:
        raise ValidationFailed("A metric needs a slug.", details={"slug": ["Letters, digits and underscores."]})
    existing = MetricDefinition.objects.filter(owner=owner, partition=partition, slug=slug).first()
    if existing is not None:
        return Resolved(existing, created=False)
    definition = MetricDefinition(
        owner=owner, partition=partition, slug=slug, label=label or slug.replace("_", " ").capitalize(), unit=unit,
        description=description, aggregation=aggregation or default_aggregation(slug),
    )  # fmt: skip
    definition.embedding, definition.embedding_model = embed(definition.card)
    similar = _most_similar(definition)
    try:
        with transaction.atomic():
            if similar is not None:
                definition.needs_review, definition.resembles = True, similar
            definition.save()
    except IntegrityError:  # created meanwhile by a concurrent request
        return Resolved(MetricDefinition.objects.get(owner=owner, partition=partition, slug=slug), created=False)
    if similar is not None:
        label = f"Review metric {definition.label} ({definition.slug}): it looks like {similar.label} ({similar.slug})"
        task, _ = task_create(owner=owner, partition=partition, actor=actor, label=label)
        MetricDefinition.objects.filter(pk=definition.pk).update(review_task=task)
        definition.review_task = task
    audit_record(
        actor=actor, owner=owner, action="metric.create", target=definition, partition=partition,
        after={"slug": slug, "needsReview": definition.needs_review, "resembles": similar.slug if similar else None},
    )  # fmt: skip
    return Resolved(definition, created=True)


def _most_similar(definition: MetricDefinition) -> MetricDefinition | None:
    if definition.embedding is None:
        return None
    threshold = settings.METRIC_SIMILARITY_PERCENT / 100
    return (
        MetricDefinition.objects.filter(
            owner=definition.owner, partition=definition.partition, embedding_model=definition.embedding_model
        )
        .annotate(distance=CosineDistance("embedding", definition.embedding))
        .filter(distance__lte=1 - threshold)
        .order_by("distance", "id")
        .first()
    )


@transaction.atomic
def observation_record(
    access: Access,
    *,
    slug: str,
    value: float,
    occurred_at: datetime,
    note: str = "",
    label: str = "",
    unit: str = "",
    description: str = "",
    aggregation: str = "",
) -> tuple[Observation, Resolved]:
    """One observation; the metric is created or reused (needs `write`)."""
    access.require_scope(Scope.WRITE)
    partition = access.write_partition()
    resolved = definition_resolve(
        owner=access.user, partition=partition, slug=slug, actor=access.actor, label=label, unit=unit,
        description=description, aggregation=aggregation,
    )  # fmt: skip
    observation = Observation.objects.create(
        owner=access.user, definition=resolved.definition, value=value, occurred_at=occurred_at, note=note
    )
    audit_record(
        actor=access.actor, owner=access.user, action="metric.observe", target=observation, partition=partition,
        after={"metric": resolved.definition.slug, "value": value},
    )  # fmt: skip
    return observation, resolved


def metric_observe(access: Access, *, slug: str, value: float, occurred_at: datetime, note: str = "") -> Observation:
    """A reading added by hand to an existing metric in reach (the web form), through `observation_record` in
    the metric's own partition: in the workspace view it must not start a same-named metric in the personal one."""
    from metrics.selectors import definition_for_access

    definition = definition_for_access(access, slug=slug)
    if not math.isfinite(value) or abs(value) > LARGEST:
        raise ValidationFailed("That is not a usable number.", details={"value": [f"Up to {LARGEST:g} in size."]})
    if not is_plausible(occurred_at):
        raise ValidationFailed(
            "That time is outside the calendar we keep.", details={"occurredAt": ["Check the year."]}
        )
    if len(note) > 500:
        raise ValidationFailed("The note is too long.", details={"note": ["At most 500 characters."]})
    observation, _ = observation_record(
        replace(access, partition=definition.partition), slug=definition.slug, value=value,
        occurred_at=occurred_at, note=note,
    )  # fmt: skip
    return observation


@dataclass(frozen=True)
class BulkOutcome:
    stored: list[Observation]
    errors: list[dict[str, Any]]  # {"index", "slug", "error": {code, message}}


@transaction.atomic
def observations_bulk(access: Access, rows: list[dict[str, Any]]) -> BulkOutcome:
    """Many observations of existing metrics: unknown slugs are per-row errors, the rest is stored."""
    access.require_scope(Scope.WRITE)
    partition = access.write_partition()
    if len(rows) > MAX_BULK:
        raise ValidationFailed("Too many observations.", details={"observations": [f"At most {MAX_BULK}."]})
    known = {
        definition.slug: definition
        for definition in MetricDefinition.objects.filter(
            owner=access.user, partition=partition, slug__in={normalize_slug(row["slug"]) for row in rows}
        )
    }
    stored, errors = [], []
    for index, row in enumerate(rows):
        definition = known.get(normalize_slug(row["slug"]))
        if definition is None:
            errors.append({
                "index": index, "slug": row["slug"],
                "error": {"code": "NOT_FOUND", "message": f"No metric {row['slug']!r}; record one observation first."},
            })  # fmt: skip
            continue
        stored.append(
            Observation(
                owner=access.user,
                definition=definition,
                value=row["value"],
                occurred_at=row["occurredAt"],
                note=row.get("note", ""),
            )
        )
    Observation.objects.bulk_create(stored)
    if stored:
        audit_record(
            actor=access.actor, owner=access.user, action="metric.observe_bulk", partition=partition,
            target_type="observation", target_id=stored[0].pk, after={"stored": len(stored), "errors": len(errors)},
        )  # fmt: skip
    return BulkOutcome(stored=stored, errors=errors)


def reading_record(
    *,
    source: Source,
    claim: Claim,
    metric: str,
    value: float,
    unit: str,
    occurred_at: datetime,
    embed: Embed = _embed,
) -> Observation:
    """A reading extracted from a source (pipeline): stored once, linked to the source, its reading claim and
    an Event node for the moment it happened."""
    actor = Actor.system()
    resolved = definition_resolve(
        owner=source.owner, partition=source.partition, slug=metric, actor=actor, unit=unit, embed=embed
    )
    event, made = Node.objects.get_or_create(
        owner=source.owner, partition=source.partition, type=NodeType.EVENT,
        label=f"{resolved.definition.label} {value:g} {unit} on {occurred_at:%Y-%m-%d}".replace("  ", " "),
        defaults={"scope": source.scope},
    )  # fmt: skip
    if made:
        memory_changed(source.owner_id)  # a node card search reads; "metric.observe" leaves the version alone
    observation, created = Observation.objects.get_or_create(
        definition=resolved.definition, source=source, occurred_at=occurred_at, value=value,
        defaults={"owner": source.owner, "event": event, "claim": claim, "note": claim.statement[:500]},
    )  # fmt: skip
    if created:
        audit_record(
            actor=actor, owner=source.owner, action="metric.observe", target=observation, partition=source.partition,
            after={"metric": resolved.definition.slug, "value": value, "sourceId": source.pk},
        )  # fmt: skip
    return observation


def _under_review(access: Access, metric_id: str) -> MetricDefinition:
    """A metric flagged for review, row-locked, in a partition this request may write."""
    from metrics.selectors import definition_for_access

    access.require_scope(Scope.WRITE)
    definition = definition_for_access(access, metric_id=metric_id)
    access.check_write(definition.partition)
    definition = MetricDefinition.objects.select_for_update().get(pk=definition.pk)
    if not definition.needs_review:
        raise Conflict("This metric is not waiting for review.", details={"metricId": metric_id})
    return definition


def _close_review_task(access: Access, definition: MetricDefinition) -> None:
    """The candidate "Review metric …" task is done once the person decided."""
    from commitments.services import current_status, status_set

    task = definition.review_task
    if task is not None and current_status(task) is not None:
        status_set(task, "completed", actor=access.actor, origin=ClaimOrigin.MANUAL)


@transaction.atomic
def metric_keep(access: Access, *, metric_id: str) -> MetricDefinition:
    """The person says it is a different metric: it stays as it is, no longer flagged."""
    definition = _under_review(access, metric_id)
    definition.needs_review = False
    definition.save(update_fields=["needs_review", "updated_at"])
    _close_review_task(access, definition)
    audit_record(
        actor=access.actor, owner=access.user, action="metric.keep", target=definition,
        partition=definition.partition, before={"needsReview": True}, after={"needsReview": False},
    )  # fmt: skip
    return definition


@transaction.atomic
def metric_merge(access: Access, *, metric_id: str) -> MetricDefinition:
    """The person says it is the metric it resembles: its observations move there and the duplicate
    definition is deleted. An observation the target already has from the same source is dropped, not
    doubled. Returns the metric merged into."""
    definition = _under_review(access, metric_id)
    if definition.resembles_id is None:
        raise Conflict("The metric this one resembled is gone; keep it as new.", details={"metricId": metric_id})
    target = MetricDefinition.objects.select_for_update().get(pk=definition.resembles_id)
    access.check_write(target.partition)
    moving = Observation.objects.filter(definition=definition)
    already = Observation.objects.filter(
        definition=target, source=OuterRef("source"), occurred_at=OuterRef("occurred_at"), value=OuterRef("value")
    )
    duplicates = moving.filter(Exists(already), source__isnull=False)  # observation_once_per_source
    dropped = duplicates.delete()[0]
    moved = moving.update(definition=target)
    _close_review_task(access, definition)
    audit_record(
        actor=access.actor, owner=access.user, action="metric.merge", target=target, partition=target.partition,
        before={"metric": definition.slug, "metricId": definition.pk},
        after={"into": target.slug, "moved": moved, "dropped": dropped},
    )  # fmt: skip
    definition.delete()
    return target

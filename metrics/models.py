"""The user's numbers as clean time series (SPEC §5): a definition per metric (slug, unit, how to aggregate)
and its observations. Kept apart from claims: a weight on Tuesday does not contradict a weight on Monday."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now
from pgvector.django import VectorField

from memory.ids import PublicIdField
from memory.models import Claim, Node, Partition, Source, User


class Aggregation(models.TextChoices):
    """How a bucket of observations becomes one value (a hint for series and summaries)."""

    MEAN = "mean"  # body weight, heart rate
    SUM = "sum"  # steps, distance
    LAST = "last"  # a score read once a day
    MIN = "min"
    MAX = "max"


class MetricDefinition(models.Model):
    id = PublicIdField(prefix="metric")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="metrics")
    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="metrics")
    slug = models.SlugField(max_length=64)
    label = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    unit = models.CharField(max_length=20, blank=True)
    aggregation = models.CharField(max_length=8, choices=Aggregation.choices, default=Aggregation.MEAN)
    needs_review = models.BooleanField(default=False, help_text="Created while a similar metric existed.")
    resembles = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The existing metric this one looked like when it was created.",
    )  # fmt: skip
    review_task = models.ForeignKey(Node, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "partition", "slug"], name="metric_unique_slug"),
        ]

    def __str__(self) -> str:
        return self.slug

    @property
    def card(self) -> str:
        """What a definition is compared by when a new one might be the same metric."""
        return " ".join(part for part in (self.label, self.unit, self.description) if part)


class Observation(models.Model):
    id = PublicIdField(prefix="obs")
    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    definition = models.ForeignKey(
        MetricDefinition, db_index=False, on_delete=models.CASCADE, related_name="observations"
    )
    value = models.FloatField()
    occurred_at = models.DateTimeField()
    note = models.CharField(max_length=500, blank=True)
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    event = models.ForeignKey(Node, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    claim = models.ForeignKey(Claim, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        indexes = [models.Index(fields=["definition", "occurred_at"], name="observation_series")]
        constraints = [
            # A reading extracted twice from the same source is one observation.
            models.UniqueConstraint(
                fields=["definition", "source", "occurred_at", "value"],
                condition=models.Q(source__isnull=False),
                name="observation_once_per_source",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.definition_id} {self.value} @ {self.occurred_at:%Y-%m-%d}"

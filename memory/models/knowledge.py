"""What memory knows: entities (nodes) with their aliases, and sourced claims with evidence (SPEC §5).

Claims are never edited in place: a correction is a new revision (`derived_from` the old one, which becomes
`superseded`), and every lifecycle change is a MemoryEvent.
"""

from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Now
from pgvector.django import VectorField

from memory.ids import PublicIdField
from memory.models.accounts import Partition, User
from memory.models.search import searchable
from memory.models.sources import Chunk, Source, SourceScope


def vector_fields(*related: str) -> tuple[str, ...]:
    """The vector columns of a claim or node and of the related nodes named (e.g. "subject"), for `defer`: a list
    never shows them, and they are the dearest values to read (pgvector parses each vector's text in Python)."""
    return tuple(f"{through}__{column}" if through else column for through in ("", *related)
                 for column in ("embedding", "search_vector"))  # fmt: skip


class NodeType(models.TextChoices):
    SELF = "Self"
    PERSON = "Person"
    ORGANIZATION = "Organization"
    PROJECT = "Project"
    TASK = "Task"
    EVENT = "Event"
    PLACE = "Place"
    TOPIC = "Topic"
    DOCUMENT = "Document"
    METRIC = "Metric"


class Node(models.Model):
    """An entity: the user (`Self`), a person, a project, a task, an event, ..."""

    id = PublicIdField(prefix="node")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="nodes")
    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="nodes")
    type = models.CharField(max_length=32, choices=NodeType.choices)
    label = models.CharField(max_length=300)
    summary = models.TextField(blank=True)
    scope = models.CharField(max_length=16, choices=SourceScope.choices, default=SourceScope.PERSONAL)
    is_self = models.BooleanField(default=False)
    attributes = models.JSONField(default=dict, blank=True)
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="merged_from",
        help_text="Lineage: this node was merged into another and is kept only as a pointer.",
    )  # fmt: skip
    last_seen_at = models.DateTimeField(null=True, blank=True)
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    search_vector = models.GeneratedField(
        expression=searchable("label", "summary"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "entity"
        verbose_name_plural = "entities"
        constraints = [
            # One self node per user and partition.
            models.UniqueConstraint(
                fields=["owner", "partition"], condition=models.Q(is_self=True), name="node_one_self_per_partition"
            )
        ]
        indexes = [
            models.Index(fields=["owner", "partition", "type"], name="node_owner_type"),
            GinIndex(fields=["search_vector"], name="node_search_vector"),
        ]

    def __str__(self) -> str:
        return f"{self.type}:{self.label}"

    @property
    def card(self) -> str:
        """What a node is found by in search: its type, label and summary."""
        return f"{self.type}: {self.label}" + (f". {self.summary}" if self.summary else "")


class Alias(models.Model):
    """Another name of a node, normalised for matching within a partition."""

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    partition = models.ForeignKey(Partition, db_index=False, on_delete=models.CASCADE, related_name="+")
    node = models.ForeignKey(Node, db_index=False, on_delete=models.CASCADE, related_name="aliases")
    name = models.CharField(max_length=300)
    normalized = models.CharField(max_length=300)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = "alias"
        verbose_name_plural = "aliases"
        constraints = [
            models.UniqueConstraint(fields=["node", "normalized"], name="alias_unique_per_node"),
        ]
        indexes = [models.Index(fields=["partition", "normalized"], name="alias_lookup")]

    def __str__(self) -> str:
        return self.name


class ClaimKind(models.TextChoices):
    FACT = "fact"
    PREFERENCE = "preference"
    DECISION = "decision"
    AGREEMENT = "agreement"
    INCIDENT = "incident"
    RULE = "rule"
    PROJECT_CONTEXT = "project_context"
    WORKING_CONTEXT = "working_context"
    HANDOFF = "handoff"
    TASK_STATUS = "task_status"
    NOTE = "note"
    READING = "reading"  # a numeric reading ("weighed 78.2 kg"), until the metrics service stores it


class ClaimStatus(models.TextChoices):
    ACTIVE = "active"
    SUGGESTED = "suggested"
    QUARANTINED = "quarantined"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
    EXPIRED = "expired"


class ClaimOrigin(models.TextChoices):
    USER_STATED = "user_stated"
    ASSISTANT_INFERRED = "assistant_inferred"
    IMPORTED = "imported"
    MANUAL = "manual"
    SYSTEM_DEFAULT = "system_default"


class Claim(models.Model):
    """A sourced statement, optionally structured as subject - predicate - object node or value."""

    id = PublicIdField(prefix="claim")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="claims")
    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="claims")
    scope = models.CharField(max_length=16, choices=SourceScope.choices, default=SourceScope.PERSONAL)
    statement = models.TextField()
    kind = models.CharField(max_length=32, choices=ClaimKind.choices, default=ClaimKind.FACT)
    subject = models.ForeignKey(
        Node, null=True, blank=True, db_index=False, on_delete=models.CASCADE, related_name="claims"
    )
    predicate = models.CharField(max_length=100, blank=True)
    object_node = models.ForeignKey(Node, null=True, blank=True, on_delete=models.CASCADE, related_name="object_claims")
    object_value = models.JSONField(null=True, blank=True)
    key = models.CharField(max_length=300, blank=True, help_text="Addressable keyed memory (seeds/004).")
    value = models.JSONField(null=True, blank=True)
    meta = models.JSONField(default=dict, blank=True, help_text="Client metadata of a keyed memory.")
    status = models.CharField(max_length=16, choices=ClaimStatus.choices, default=ClaimStatus.ACTIVE)
    origin = models.CharField(max_length=24, choices=ClaimOrigin.choices, default=ClaimOrigin.USER_STATED)
    extractor = models.CharField(max_length=100, blank=True, help_text="Extractor and version, e.g. rules@1.")
    model_name = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True, help_text="Why an inferred claim matters in the future.")
    derived_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="revisions")
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    # The active claim a `suggested` one was held back for (reconcile), so review can show them side by side.
    conflicts_with = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="conflicting_suggestions"
    )
    confidence = models.FloatField(default=1.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    importance = models.PositiveSmallIntegerField(default=3, validators=[MinValueValidator(1), MaxValueValidator(5)])
    pinned = models.BooleanField(default=False)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True)
    stated_at = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField(null=True, blank=True)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    access_count = models.PositiveIntegerField(default=0)
    needs_reverification = models.BooleanField(default=False)
    event_id = models.CharField(max_length=200, blank=True, help_text="Client id making a write exactly-once.")
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    search_vector = models.GeneratedField(
        expression=searchable("statement"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # Exactly-once per client write id, within the partition it was written to.
            models.UniqueConstraint(
                fields=["owner", "partition", "event_id"],
                condition=~models.Q(event_id=""),
                name="claim_unique_event_id",
            ),
            # A keyed memory has one current value (memory.services.memories.memory_save supersedes the old one).
            models.UniqueConstraint(
                fields=["owner", "partition", "key"],
                condition=models.Q(status="active") & ~models.Q(key=""),
                name="claim_one_current_value_per_key",
            ),
            models.CheckConstraint(
                condition=models.Q(importance__gte=1, importance__lte=5), name="claim_importance_1_to_5"
            ),
            # seeds/000: a Task has exactly one active status (commitments.services.status_set keeps it so).
            models.UniqueConstraint(
                fields=["subject"],
                condition=models.Q(predicate="HAS_TASK_STATUS", status="active"),
                name="claim_one_active_task_status",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0, confidence__lte=1), name="claim_confidence_0_to_1"
            ),
        ]
        indexes = [
            # The rows in a search's reach, counted from the index alone (memory.recall.word_statistics).
            models.Index(fields=["owner", "partition", "status", "scope"], name="claim_reach"),
            models.Index(fields=["subject", "predicate", "status"], name="claim_subject_predicate"),
            # A node card's time: the evidence of its most recently stated claims, not of all of them
            # (memory.recall.search.node_results); covering, so the claim ids come from the index alone.
            models.Index(
                fields=["subject", "-stated_at"],
                include=["id"],
                condition=models.Q(status="active"),
                name="claim_subject_recent",
            ),
            models.Index(fields=["owner", "partition", "key"], name="claim_owner_key"),
            # A list of claims newest first (memory.selectors.claims_for_access: /claim/list, /ui/claims/): read in
            # order, its page is the first rows that pass its filters, not every row sorted.
            models.Index(fields=["owner", "-recorded_at", "-id"], name="claim_owner_recent"),
            # What changed since a moment, oldest first (memory.recall.changes: /query/recent-changes), read in order.
            # Access bookkeeping's UPDATE leaves updated_at as it is, so it stays HOT (a Claim.save() changes
            # updated_at, and so writes this index too).
            models.Index(fields=["owner", "updated_at", "id"], name="claim_owner_changed"),
            # The atlas's sections a session starts with (memory.recall.atlas.atlas_sections): the pinned claims and
            # the current context, each a few rows of many, read in their order.
            models.Index(
                fields=["owner", "-importance", "-recorded_at"],
                condition=models.Q(pinned=True, status="active"),
                name="claim_pinned",
            ),
            models.Index(
                fields=["owner", "-stated_at", "-recorded_at"],
                condition=models.Q(kind="working_context", status="active"),
                name="claim_working_context",
            ),
            # The claims of a kind or an origin, for filters that keep few of many (a list of claims by a rare kind or
            # origin read every claim without it); an origin alone is read by skipping over the kinds.
            models.Index(fields=["owner", "kind", "origin"], name="claim_kind_origin"),
            # Claims flagged for reverification, a few of many: the claims list's filter and the drift scan.
            models.Index(
                fields=["owner", "-recorded_at", "-id"],
                condition=models.Q(needs_reverification=True),
                name="claim_flagged",
            ),
            GinIndex(fields=["search_vector"], name="claim_search_vector"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.statement[:60]}"


class Evidence(models.Model):
    """Where a claim comes from: a source, the excerpt, and the message it was said in."""

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    claim = models.ForeignKey(Claim, db_index=False, on_delete=models.CASCADE, related_name="evidence")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="evidence")
    chunk = models.ForeignKey(Chunk, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    excerpt = models.TextField()
    message_id = models.CharField(max_length=300, blank=True)
    authored_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = "evidence"
        verbose_name_plural = "evidence"
        constraints = [
            models.UniqueConstraint(fields=["claim", "source", "message_id"], name="evidence_unique_per_claim")
        ]

    def __str__(self) -> str:
        return f"{self.claim_id} <- {self.source_id}"


class Scratchpad(models.Model):
    """One free-text working note per partition, edited with optimistic versions."""

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    partition = models.OneToOneField(Partition, on_delete=models.CASCADE, related_name="scratchpad")
    content = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"scratchpad of {self.partition_id} v{self.version}"


class AgentSession(models.Model):
    """An agent's working session (seeds/004): an ordered log of events, scoped to a partition."""

    id = PublicIdField(prefix="ses")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="+")
    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="agent_sessions")
    title = models.CharField(max_length=300, blank=True)
    agent = models.CharField(max_length=200, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    last_sequence = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["owner", "partition", "-created_at"], name="session_owner_recent")]

    def __str__(self) -> str:
        return self.title or self.id


class SessionEvent(models.Model):
    """One event of a session, numbered 1, 2, 3 ... in the order it was appended."""

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(AgentSession, db_index=False, on_delete=models.CASCADE, related_name="events")
    sequence = models.PositiveIntegerField()
    kind = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    # Who appended it: through a token it is an agent's account, whatever role it claims (memory.services.curation).
    appended_by = models.CharField(max_length=16, default="token", help_text="user, token or system (ActorKind).")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = "agent session event"
        verbose_name_plural = "agent session events"
        constraints = [models.UniqueConstraint(fields=["session", "sequence"], name="session_event_sequence")]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.sequence} {self.kind}"

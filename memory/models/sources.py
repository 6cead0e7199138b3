"""What was handed to memory: blobs (original bytes), sources, their chunks, and processing receipts (SPEC §5)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import F, Func, Value
from django.db.models.functions import Lower, Now
from pgvector.django import VectorField

from memory.ids import PublicIdField
from memory.models.accounts import Partition, User
from memory.models.search import searchable

BLOB_MAX_BYTES = 50 * 1024 * 1024
# How much of a chunk's context goes into its vector: the end of a document chunk's (its title), or of the turns
# before a turn when their own vector is not at hand (memory.services.embeddings.chunk_recipes).
EMBEDDED_CONTEXT_CHARS = 48
# What a message's speaker is when a client sends no name: a role, which names no one.
ROLE_SPEAKERS = {"", "user", "assistant", "system", "tool", "other"}


def speaker_name(speaker: str) -> str:
    """The person who spoke, or "" when `speaker` is only a role."""
    return "" if speaker.lower() in ROLE_SPEAKERS else speaker


def turn_context(before: str, speaker: str) -> str:
    """A turn's searchable context: the end of the turns before it, then the speaker's name (not a role), so it
    reads as the line the turn continues ("… Where did you go? Caroline:"). `Chunk.turn_before` reads it back."""
    name = speaker_name(speaker)
    return " ".join(part for part in (before, f"{name}:" if name else "") if part)


class Blob(models.Model):
    """Original bytes, content-addressed by SHA-256 and deduplicated per owner. Shared by files and artifacts."""

    id = PublicIdField(prefix="blb")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="blobs")
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    mime_type = models.CharField(max_length=200)
    storage_name = models.CharField(max_length=300)
    is_artifact = models.BooleanField(default=False, help_text="Put through the artifact API (listed there).")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = "stored file"
        verbose_name_plural = "stored files"
        constraints = [models.UniqueConstraint(fields=["owner", "sha256"], name="blob_unique_sha_per_owner")]

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.size} bytes)"


class ArtifactPlacement(models.Model):
    """A partition an artifact was put through. The bytes are kept once per owner (Blob), but an artifact is
    listed and read only in the partitions that put it, as everything else follows its partition."""

    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    blob = models.ForeignKey(Blob, db_index=False, on_delete=models.CASCADE, related_name="placements")
    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="artifact_placements")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = "file placement"
        verbose_name_plural = "file placements"
        constraints = [
            models.UniqueConstraint(fields=["blob", "partition"], name="artifact_placement_unique_per_partition")
        ]

    def __str__(self) -> str:
        return f"{self.blob_id} in {self.partition_id}"


class SourceKind(models.TextChoices):
    CONVERSATION = "conversation"
    MESSAGE = "message"
    DOCUMENT = "document"
    FILE = "file"
    TRANSCRIPT = "transcript"
    SESSION = "session"
    NOTE = "note"


class SourceScope(models.TextChoices):
    PERSONAL = "personal", "Personal (about the user)"
    REFERENCE = "reference", "Reference (books, articles, external material)"


class SourceQuerySet(models.QuerySet["Source"]):
    def live(self) -> SourceQuerySet:
        return self.filter(tombstoned_at__isnull=True)


class Source(models.Model):
    """One thing a client sent: a conversation, a message, a document, a file, a transcript.

    The identity is (owner, partition, kind, external_id) among live rows; `updateExisting` tombstones the
    live row and creates the next version. Messages are children of their conversation.
    """

    id = PublicIdField(prefix="src")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="sources")
    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="sources")
    kind = models.CharField(max_length=16, choices=SourceKind.choices)
    scope = models.CharField(max_length=16, choices=SourceScope.choices, default=SourceScope.PERSONAL)
    external_id = models.CharField(max_length=500)
    parent = models.ForeignKey(
        "self", null=True, blank=True, db_index=False, on_delete=models.CASCADE, related_name="children"
    )
    ordinal = models.PositiveIntegerField(default=0, help_text="Position among the parent's children.")
    title = models.CharField(max_length=500, blank=True)
    content = models.TextField(blank=True, help_text="The text as sent (conversations, messages, documents).")
    markdown = models.TextField(blank=True, help_text="Converted text of a file; the original stays in the blob.")
    content_hash = models.CharField(max_length=64, blank=True)
    version = models.PositiveIntegerField(default=1)
    source_context = models.JSONField(default=dict, blank=True)
    # Messages: who said it, when, in which thread.
    role = models.CharField(max_length=32, blank=True)
    speaker = models.CharField(max_length=200, blank=True)
    message_id = models.CharField(max_length=300, blank=True)
    thread_id = models.CharField(max_length=300, blank=True)
    authored_at = models.DateTimeField(null=True, blank=True)
    participants = models.JSONField(default=list, blank=True)
    # Transcripts: [{"speaker", "text", "start"?, "timestamp"?}] in order; `content` holds them rendered.
    segments = models.JSONField(default=list, blank=True)
    # Files.
    blob = models.ForeignKey(Blob, null=True, blank=True, on_delete=models.PROTECT, related_name="sources")
    filename = models.CharField(max_length=300, blank=True)
    mime_type = models.CharField(max_length=200, blank=True)
    occurred_at = models.DateTimeField(help_text="When it happened: the client's timestamp, else first receipt.")
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(auto_now=True)
    tombstoned_at = models.DateTimeField(null=True, blank=True)
    identity_retired_at = models.DateTimeField(null=True, blank=True)
    extracted_at = models.DateTimeField(null=True, blank=True, help_text="When its text was last extracted.")

    objects = SourceQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "partition", "kind", "external_id"],
                condition=models.Q(tombstoned_at__isnull=True),
                name="source_unique_live_identity",
            )
        ]
        indexes = [
            models.Index(fields=["owner", "partition", "-occurred_at"], name="source_owner_recent"),
            models.Index(fields=["parent", "ordinal"], name="source_children"),
            # The turns of a conversation no job has read yet (Job.unread_sources): a job of one new turn reads
            # one row through it, however long the conversation.
            models.Index(
                fields=["parent", "ordinal"],
                condition=models.Q(extracted_at__isnull=True, tombstoned_at__isnull=True),
                name="source_children_unread",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.external_id}"

    @property
    def text(self) -> str:
        """The readable text: converted Markdown for files, the content for everything else."""
        return self.markdown if self.kind == SourceKind.FILE else self.content


class Chunk(models.Model):
    """A searchable piece of a source's text, with the way back to its message (id, speaker, time)."""

    id = PublicIdField(prefix="chk")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="+")
    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Source, db_index=False, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    char_start = models.PositiveIntegerField()
    char_end = models.PositiveIntegerField()
    message_id = models.CharField(max_length=300, blank=True)
    speaker = models.CharField(max_length=200, blank=True)
    authored_at = models.DateTimeField(null=True, blank=True)
    # Its source's scope, and when what it says happened (its message's time, else its source's): set when it is
    # made and never changed, as neither changes on a source. A search filters and dates chunks by them without
    # reading their sources (memory.recall.corpora). A replaced or erased source's chunks are deleted with it.
    scope = models.CharField(max_length=16, choices=SourceScope.choices)
    occurred_at = models.DateTimeField()
    # Dimensions are not fixed: the model id says which model (and so which size) made the vector.
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    context = models.TextField(
        blank=True, default="", help_text="Also searchable: the speaker and the turns before a message, a title."
    )
    search_vector = models.GeneratedField(
        expression=searchable("text", "context"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = "passage"
        verbose_name_plural = "passages"
        constraints = [models.UniqueConstraint(fields=["source", "ordinal"], name="chunk_unique_ordinal")]
        indexes = [
            GinIndex(fields=["search_vector"], name="chunk_search_vector"),
            models.Index(fields=["owner", "embedding_model"], name="chunk_owner_model"),
            models.Index(fields=["owner", "partition", "scope"], name="chunk_reach"),  # as claim_reach
            # Who spoke in a partition, by first name: the people a question names (memory.recall.anchors).
            models.Index(
                F("owner"),
                F("partition"),
                Lower(Func(F("speaker"), Value(" "), Value(1), function="split_part")),
                name="chunk_partition_speaker",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_id}#{self.ordinal}"

    @classmethod
    def of(cls, source: Source, *, authored_at: datetime | None = None, **fields: Any) -> Chunk:
        """An unsaved chunk of `source`: its owner, partition and scope, and its time (`authored_at`, else the
        source's)."""
        chunk = cls(
            owner_id=source.owner_id, partition_id=source.partition_id, source=source, authored_at=authored_at, **fields
        )
        chunk.take_scope_and_time(source)
        return chunk

    def take_scope_and_time(self, source: Source) -> None:
        """This chunk's scope is its source's; its time its own `authored_at`, else the source's."""
        self.scope = source.scope
        self.occurred_at = self.authored_at or source.occurred_at

    @property
    def embedding_text(self) -> str:
        """The chunk's own text as it is embedded. A turn (one speaker's words): the speaker's name, if a person's,
        then the text; the turns before it are not embedded with it (memory.services.embeddings blends in their
        vector instead). Anything else: the end of its context (a title), then the text."""
        if self.speaker:
            name = speaker_name(self.speaker)
            return f"{name}:\n{self.text}" if name else self.text
        return f"{self.context[-EMBEDDED_CONTEXT_CHARS:]}\n{self.text}" if self.context else self.text

    @property
    def turn_before(self) -> str:
        """For a turn, the end of what it follows (its context, as `turn_context` wrote it, without the speaker's
        name: the turns before it, or a transcript's title); "" for anything else."""
        if not self.speaker:
            return ""
        name = speaker_name(self.speaker)
        before = self.context.removesuffix(f"{name}:").rstrip() if name else self.context
        return before[-EMBEDDED_CONTEXT_CHARS:]


class OperationStatus(models.TextChoices):
    QUEUED = "queued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


class Operation(models.Model):
    """A processing receipt: one run of the pipeline over one version of one source."""

    id = PublicIdField(prefix="op")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="operations")
    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.SET_NULL, related_name="operations")
    source_version = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, default="ingest")
    status = models.CharField(max_length=16, choices=OperationStatus.choices, default=OperationStatus.QUEUED)
    step = models.CharField(max_length=32, blank=True, help_text="The step running now, or the last one run.")
    steps_done = models.JSONField(default=list, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    task_id = models.CharField(max_length=64, blank=True)
    request_hash = models.CharField(
        max_length=64, blank=True, db_index=True, help_text="SHA-256 of the ingestion request, to answer replays."
    )
    queued_at = models.DateTimeField(db_default=Now())
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # While a job runs it touches heartbeat_at every few seconds; `runner` is "host:pid" of the process running
    # it. A processing receipt whose runner is gone reads as PROCESSING_INTERRUPTED and its job may resume.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    runner = models.CharField(max_length=160, blank=True)

    class Meta:
        verbose_name = "processing receipt"
        verbose_name_plural = "processing receipts"
        indexes = [
            models.Index(fields=["owner", "status"], name="operation_owner_status"),
            # The receipts queued or running, of every owner, oldest first (memory.pipeline.ahead reads the next
            # job's texts where no other process runs one).
            models.Index(
                fields=["status", "queued_at", "id"],
                name="operation_open",
                condition=models.Q(status__in=[OperationStatus.QUEUED, OperationStatus.PROCESSING]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.status}"

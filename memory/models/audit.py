"""What happened: the append-only audit trail (MemoryEvent) and content-free call telemetry (ToolEvent)."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models.functions import Now

from memory.ids import PublicIdField
from memory.models.accounts import AccessToken, Partition, User


class ActorKind(models.TextChoices):
    USER = "user", "User (web UI or admin)"
    TOKEN = "token", "Access token"
    SYSTEM = "system", "System (pipeline, maintenance)"


class ChangeSurface(models.TextChoices):
    """Through which door a change came in; rows older than this field have none ("unknown")."""

    UNKNOWN = "", "unknown"
    REST = "rest", "REST API"
    MCP = "mcp", "MCP"
    UI = "ui", "web UI"
    ADMIN = "admin", "admin"
    PIPELINE = "pipeline", "pipeline"


class MemoryEvent(models.Model):
    """One change to memory. Rows are never updated, except that erasure blanks their content."""

    id = PublicIdField(prefix="evt")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="memory_events")
    partition = models.ForeignKey(
        Partition, null=True, blank=True, db_index=False, on_delete=models.SET_NULL, related_name="+"
    )
    actor_kind = models.CharField(max_length=8, choices=ActorKind.choices)
    actor_user = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor_token = models.ForeignKey(
        AccessToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="memory_events"
    )
    surface = models.CharField(max_length=8, choices=ChangeSurface.choices, blank=True, default="")
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=32)
    target_id = models.CharField(max_length=64)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = "change"
        verbose_name_plural = "changes (audit trail)"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="memoryevent_owner_recent"),
            models.Index(fields=["owner", "target_type", "target_id"], name="memoryevent_owner_target"),
            # One action's rows, newest first: the activity page's filter and the latest review decisions.
            models.Index(fields=["owner", "action", "-created_at"], name="memoryevent_owner_action"),
            # A partition's newest change (coordination health), also for a partition with none.
            models.Index(fields=["partition", "-created_at"], name="memoryevent_partition_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target_type}:{self.target_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise TypeError("MemoryEvent rows are append-only; erase content with audit_erase_target().")
        super().save(*args, **kwargs)


class ToolEvent(models.Model):
    """One REST or MCP call: what was called, by which token, how it ended. Never any content."""

    class Outcome(models.TextChoices):
        OK = "ok", "OK"
        CLIENT_ERROR = "client_error", "Client error"
        SERVER_ERROR = "server_error", "Server error"

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(
        User, null=True, blank=True, db_index=False, on_delete=models.CASCADE, related_name="tool_events"
    )
    token = models.ForeignKey(AccessToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    surface = models.CharField(max_length=8)
    tool = models.CharField(max_length=64)
    partition_key = models.CharField(max_length=64, blank=True)
    status_code = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    error_code = models.CharField(max_length=40, blank=True)
    duration_ms = models.PositiveIntegerField()
    request_bytes = models.PositiveIntegerField(default=0)
    response_bytes = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = "API or MCP call"
        verbose_name_plural = "API and MCP calls"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="toolevent_owner_recent")]

    def __str__(self) -> str:
        return f"{self.surface}:{self.tool} {self.status_code}"


class FeedbackKind(models.TextChoices):
    MISSING_MEMORY = "missing_memory", "Something should have been remembered"
    WRONG_MEMORY = "wrong_memory", "A memory is wrong"
    STALE_MEMORY = "stale_memory", "A memory is out of date"
    BUG = "bug", "Bug"
    SUGGESTION = "suggestion", "Suggestion"
    PRAISE = "praise", "Praise"
    OTHER = "other", "Other"


class Feedback(models.Model):
    """What an assistant or agent reports about memory itself (seeds/004 `observation_log`): a missing, wrong or
    stale memory, a bug, a suggestion. Kept apart from memory content; not tied to the token that sent it."""

    id = PublicIdField(prefix="fb")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="feedback")
    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=FeedbackKind.choices)
    note = models.TextField()
    tool = models.CharField(max_length=64, blank=True, help_text="The tool the feedback is about, if any.")
    claim = models.ForeignKey("memory.Claim", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    source = models.ForeignKey("memory.Source", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    event_id = models.CharField(max_length=200, blank=True, help_text="Client id making the report exactly-once.")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = "feedback report"
        verbose_name_plural = "feedback reports"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "event_id"], condition=~models.Q(event_id=""), name="feedback_unique_event_id"
            )
        ]
        indexes = [models.Index(fields=["owner", "partition", "-created_at"], name="feedback_owner_recent")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.note[:60]}"

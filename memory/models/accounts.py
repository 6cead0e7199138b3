"""Who owns memory and who may reach it: users, partitions and access tokens (SPEC §4)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractUser
from django.contrib.postgres.fields import ArrayField
from django.db import models, transaction
from django.db.models.functions import Now
from django.utils import timezone

from memory.ids import PublicIdField

PERSONAL_PARTITION_KEY = "memory:personal"


class User(AbstractUser):
    """A person who owns a memory. `external_id` is the `userId` chat hosts send (default: username)."""

    external_id = models.CharField(
        max_length=200,
        unique=True,
        help_text="The userId chat hosts send for this person. Defaults to the username.",
    )

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self.external_id:
            self.external_id = self.username
        adding = self._state.adding
        with transaction.atomic():
            super().save(*args, **kwargs)
            if adding:
                # Every user has a personal partition from the moment they exist, however they were created
                # (admin, createsuperuser, sign-up, bootstrap).
                Partition.objects.get_or_create(owner=self, key=PERSONAL_PARTITION_KEY, defaults={"label": "Personal"})


class Partition(models.Model):
    """The tenant boundary inside one user's memory (`namespace` in MCP)."""

    id = PublicIdField(prefix="prt")
    owner = models.ForeignKey(User, db_index=False, on_delete=models.CASCADE, related_name="partitions")
    key = models.CharField(max_length=64)
    label = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(db_default=Now())
    deactivated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="partition_unique_key_per_owner")]
        ordering = ["owner", "key"]

    def __str__(self) -> str:
        return self.key

    @property
    def is_personal(self) -> bool:
        return self.key == PERSONAL_PARTITION_KEY


class Scope(models.TextChoices):
    READ = "read", "Read"
    WRITE = "write", "Write"
    EDIT = "edit", "Edit (correct, delete)"
    MAINTENANCE = "maintenance", "Maintenance"


class Surface(models.TextChoices):
    """What the token is for: shown in lists so people know which client a token belongs to."""

    REST = "rest", "REST client"
    MCP = "mcp", "MCP client"
    HOST = "host", "Chat host"
    CLI = "cli", "Command line"
    UI = "ui", "Web UI"


class ToolProfile(models.TextChoices):
    ASSISTANT = "assistant", "Assistant (seeds/000 tools)"
    AGENT = "agent", "Agent (coordination tools)"
    FULL = "full", "Full (all tools)"


def default_scopes() -> list[str]:
    return [Scope.READ, Scope.WRITE]


class AccessTokenQuerySet(models.QuerySet["AccessToken"]):
    def usable(self) -> AccessTokenQuerySet:
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=timezone.now())
        )


class AccessToken(models.Model):
    """A credential for one client. The secret is shown once; only its SHA-256 is stored."""

    id = PublicIdField(prefix="tok")
    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="access_tokens")
    label = models.CharField(max_length=200)
    surface = models.CharField(max_length=16, choices=Surface.choices, default=Surface.REST)
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False, help_text="The first characters, for display.")
    scopes = ArrayField(models.CharField(max_length=16, choices=Scope.choices), default=default_scopes)
    partition_keys = ArrayField(
        models.CharField(max_length=64),
        default=list,
        blank=True,
        help_text="Partitions this token may reach. Empty: all of the user's partitions.",
    )
    default_partition_key = models.CharField(
        max_length=64, blank=True, help_text="Used when a request names no partition. Empty: memory:personal."
    )
    profile = models.CharField(max_length=16, choices=ToolProfile.choices, default=ToolProfile.ASSISTANT)
    allow_query_token = models.BooleanField(
        default=False, help_text="Accept this token as ?token= for clients that cannot send headers."
    )
    acts_for = models.ManyToManyField(
        User,
        blank=True,
        related_name="host_tokens",
        help_text="A chat host token: the users it may act for (requests must name one as userId).",
    )
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="Overrides RATE_LIMIT_PER_MINUTE for this token."
    )
    rotated_from = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="rotated_to"
    )
    created_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = AccessTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.label} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_host(self) -> bool:
        return self.surface == Surface.HOST

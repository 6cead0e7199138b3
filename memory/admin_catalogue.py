"""The admin pages of the records the product keeps beside claims and sources: aliases, evidence, scratchpads,
agent sessions and their events, file placements, feedback, writes owed to Redis. All view only: each changes through
its service."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest

from memory.admin_base import ReadOnlyAdmin, heavy
from memory.models import (
    AgentSession,
    Alias,
    ArtifactPlacement,
    Evidence,
    Feedback,
    RedisDebt,
    Scratchpad,
    SessionEvent,
    User,
)


@admin.register(Alias)
class AliasAdmin(ReadOnlyAdmin):
    """Other names of an entity (added and removed on the entity's page or through /alias/*)."""

    list_display = ("name", "node", "owner", "partition", "created_at")
    search_fields = ("name", "node__label", "owner__username")
    list_filter = ("node__type",)
    list_select_related = ("node", "owner", "partition")
    deferred = heavy("node", "node")


@admin.register(Evidence)
class EvidenceAdmin(ReadOnlyAdmin):
    """Which message or passage supports a claim."""

    list_display = ("claim", "source", "message_id", "authored_at", "owner", "created_at")
    exact_search = ("claim", "source", "owner__username")
    search_help_text = "A claim's or a source's id, or an owner's username, exactly."
    list_select_related = ("claim", "source", "owner")
    deferred = ("excerpt", *heavy("claim", "claim"), *heavy("source", "source"))


@admin.register(Scratchpad)
class ScratchpadAdmin(ReadOnlyAdmin):
    """One per partition; its text is read and written through /scratchpad/*."""

    list_display = ("partition", "owner", "version", "updated_at")
    search_fields = ("partition__key", "owner__username")
    list_select_related = ("partition", "owner")
    deferred = ("content",)


class SessionEventInline(admin.TabularInline):
    model = SessionEvent
    fields = ("sequence", "kind", "appended_by", "created_at")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    """An agent's working session: its ordered event log (appended through /session/*)."""

    list_display = ("__str__", "agent", "owner", "partition", "last_sequence", "updated_at")
    list_filter = ("agent",)
    search_fields = ("title", "agent", "owner__username")
    list_select_related = ("owner", "partition")
    deferred = ("meta",)
    inlines = (SessionEventInline,)


@admin.register(SessionEvent)
class SessionEventAdmin(ReadOnlyAdmin):
    list_display = ("session", "sequence", "kind", "appended_by", "owner", "created_at")
    list_filter = ("kind", "appended_by")
    search_fields = ("session__title", "session__id", "owner__username")
    list_select_related = ("session", "owner")
    deferred = ("payload", *heavy("agentsession", "session"))


@admin.register(ArtifactPlacement)
class ArtifactPlacementAdmin(ReadOnlyAdmin):
    """Which partition holds a stored file (one file can be placed in several)."""

    list_display = ("blob", "partition", "owner", "created_at")
    search_fields = ("blob__sha256", "partition__key", "owner__username")
    list_select_related = ("blob", "partition", "owner")


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    """observation_log reports, read-only: what assistants and agents noticed about memory itself."""

    list_display = ("created_at", "kind", "owner", "partition", "tool", "claim", "source")
    list_filter = ("kind",)
    search_fields = ("note", "tool", "owner__username")
    list_select_related = ("owner", "partition", "claim", "source")
    deferred = ("note", *heavy("claim", "claim"), *heavy("source", "source"))


@admin.register(RedisDebt)
class RedisDebtAdmin(ReadOnlyAdmin):
    """Writes a process could not make while Redis was away, left for the next settling (a process hearing Redis
    again, a web process as it starts, beat every minute): an owner's memory version, an erasure's cached views, the
    credentials' generation."""

    list_display = ("kind", "owner", "recorded_at")
    list_filter = ("kind",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[RedisDebt]:
        # The owner is a bare id (an erased account's views are still owed a drop): named in the list's one query.
        username = User.objects.filter(pk=OuterRef("owner_id")).values("username")
        return super().get_queryset(request).annotate(owner_name=Subquery(username))

    @admin.display(description="owner", ordering="owner_id")
    def owner(self, debt: RedisDebt) -> str:
        if not debt.owner_id:
            return "every owner"
        return getattr(debt, "owner_name", None) or f"erased account {debt.owner_id}"

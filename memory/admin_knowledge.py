"""The admin pages of what memory holds: sources and their processing, blobs, chunks, nodes and claims. All view only
but a node added by hand and an operation retried, each through its service."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from memory.access import Actor, access_for_user
from memory.admin_actions import merge_nodes
from memory.admin_base import ProductAdmin, ReadOnlyAdmin, heavy, vocabulary_filter
from memory.errors import ServiceError
from memory.models import Blob, Chunk, Claim, ClaimOrigin, Node, NodeType, Operation, Source
from memory.pipeline.steps import RECEIPT_ERROR_CODES
from memory.services.audit import audit_record
from memory.services.embeddings import chunk_models_in_use
from memory.services.operations import operation_retry


@admin.register(Source)
class SourceAdmin(ReadOnlyAdmin):
    list_display = ("external_id", "kind", "owner", "partition", "scope", "version", "occurred_at", "tombstoned_at")
    list_filter = ("kind", "scope")
    search_fields = ("external_id", "title", "owner__username")
    list_select_related = ("owner", "partition")
    # Content is read through /source/get, where access is checked and logged; the admin shows the envelope.
    exclude = ("content", "markdown", "segments", "source_context", "participants", "title")
    deferred = heavy("source")


@admin.register(Operation)
class OperationAdmin(ReadOnlyAdmin):
    list_display = ("id", "owner", "source", "status", "step", "error_code", "attempts", "queued_at", "finished_at")
    list_filter = ("status", vocabulary_filter("error_code", "error code", lambda: RECEIPT_ERROR_CODES))
    search_fields = ("id", "source__external_id", "owner__username")
    list_select_related = ("owner", "source")
    deferred = ("steps_done", "counts", *heavy("source", "source"))
    actions = ["retry"]

    @admin.action(description="Retry (failed or interrupted operations only)")
    def retry(self, request: HttpRequest, queryset: QuerySet[Operation]) -> None:
        for operation in queryset.select_related("owner", "partition"):
            access = access_for_user(
                user=operation.owner,
                partition_key=operation.partition.key,
                acting=Actor.admin(request.user),  # type: ignore[arg-type]
            )
            try:
                operation_retry(access=access, operation_id=operation.pk)
            except ServiceError as exc:
                self.message_user(request, f"{operation.pk}: {exc.message}", messages.ERROR)


@admin.register(Blob)
class BlobAdmin(ReadOnlyAdmin):
    list_display = ("sha256", "owner", "size", "mime_type", "is_artifact", "created_at")
    search_fields = ("sha256", "owner__username")
    list_select_related = ("owner",)


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = ("id", "source", "ordinal", "message_id", "speaker", "embedding_model")
    list_filter = (
        vocabulary_filter("embedding_model", "embedding model", chunk_models_in_use, blank="not embedded yet"),
    )
    list_select_related = ("source",)
    exclude = ("text", "embedding")
    deferred = (*heavy("chunk"), *heavy("source", "source"))


class NodeForm(forms.ModelForm):
    class Meta:
        model = Node
        fields = ("owner", "partition", "type", "label", "summary", "scope")

    def clean(self) -> dict[str, Any]:
        """Every row carries its owner and lives in one of that owner's partitions: never mix two users."""
        data = super().clean() or {}
        owner, partition = data.get("owner"), data.get("partition")
        if owner is not None and partition is not None and partition.owner_id != owner.pk:
            self.add_error("partition", f"This partition belongs to {partition.owner}, not to {owner}.")
        return data


@admin.register(Node)
class NodeAdmin(ProductAdmin):
    """Browse the graph; add a node by hand. A Task added here gets its candidate `pending` status at once
    (commitments.services), like on every other path, so it is never invisible to the commitment views."""

    list_display = ("label", "type", "owner", "partition", "scope", "merged_into", "created_at")
    list_filter = ("type", "scope")
    search_fields = ("label", "owner__username")
    list_select_related = ("owner", "partition", "merged_into")
    deferred = (*heavy("node"), *heavy("node", "merged_into"))
    actions = [merge_nodes]
    form = NodeForm
    fields = ("owner", "partition", "type", "label", "summary", "scope")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # An entity is changed on its page or through /node/*, which keep aliases and the audit trail right.
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # erasure goes through /node/delete, which removes what was derived and audits it

    def save_model(self, request: HttpRequest, obj: Node, form: forms.ModelForm, change: bool) -> None:
        from commitments.services import status_set

        with transaction.atomic():
            super().save_model(request, obj, form, change)
            actor = Actor.admin(request.user)  # type: ignore[arg-type]
            audit_record(actor=actor, owner=obj.owner, action="node.create", target=obj, partition=obj.partition,
                         after={"type": obj.type, "label": obj.label})  # fmt: skip
            if not change and obj.type == NodeType.TASK:
                status_set(obj, "pending", actor=actor, origin=ClaimOrigin.ASSISTANT_INFERRED)


@admin.register(Claim)
class ClaimAdmin(ReadOnlyAdmin):
    list_display = ("statement", "kind", "status", "origin", "owner", "subject", "pinned", "recorded_at")
    list_filter = ("kind", "status", "origin", "pinned", "needs_reverification", "owner")
    words_search = "search_vector"
    search_help_text = 'Words of the statement, as the claims list\'s text filter reads them ("quoted phrase", -word).'
    list_select_related = ("owner", "subject")
    exclude = ("embedding",)
    deferred = (*heavy("claim"), *heavy("node", "subject"))

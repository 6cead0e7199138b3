"""Ingestion: store what a client sends exactly once, answer with a receipt, and queue its processing.

Rules (seeds/000): the identity of a source is (owner, partition, kind, external id); an identical replay
returns the original receipt and writes nothing; the same identity with other content is a CONFLICT unless
`updateExisting` (tombstone and recreate); a retired identity accepts nothing; children inherit their
parent's partition; a missing timestamp falls back to the first receipt's time, which concurrent requests
for the same identity share (they queue on an advisory lock for that identity).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from memory.access import Access
from memory.errors import Conflict, NotFound, ServiceError, ValidationFailed
from memory.models import Chunk, Operation, Partition, Scope, Source, SourceKind
from memory.models.copy_rows import copy_rows
from memory.services.audit import audit_record
from memory.services.blobs import SpooledUpload, blob_store
from memory.services.ingestion_shapes import (
    ConversationIn,
    DocumentIn,
    MessageIn,
    SegmentIn,
    TranscriptIn,
    render_segments,
    segments_from_text,
)
from memory.services.operations import operation_enqueue, operation_restore_if_lost

__all__ = [
    "ConversationIn",
    "DocumentIn",
    "MessageIn",
    "Receipt",
    "SegmentIn",
    "TranscriptIn",
    "ingest_conversation",
    "ingest_document",
    "ingest_file",
    "ingest_transcript",
    "render_segments",
    "segments_from_text",
]


class IdentityRetired(ServiceError):
    code = "IDENTITY_RETIRED"


@dataclass(frozen=True)
class Receipt:
    operation: Operation
    source: Source
    deduplicated: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "operationId": self.operation.pk,
            "sourceId": self.source.pk,
            "status": self.operation.status,
            "deduplicated": self.deduplicated,
        }


def _hash(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _lock_identity(access: Access, partition: Partition, kind: str, external_id: str) -> None:
    """Serialise requests for one identity until the end of the transaction."""
    key = f"source:{access.user.pk}:{partition.pk}:{kind}:{external_id}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])


def _replay(access: Access, request_hash: str) -> Receipt | None:
    """The original receipt of an identical request, while the version it stored is still the live one (a
    replay of a request that was since replaced goes through the identity rules and meets a CONFLICT)."""
    operation = (
        Operation.objects.select_related("source")
        .filter(owner=access.user, request_hash=request_hash, source__tombstoned_at__isnull=True)
        .order_by("-queued_at")
        .first()
    )
    if operation is None or operation.source is None:
        return None
    operation_restore_if_lost(operation)
    return Receipt(operation=operation, source=operation.source, deduplicated=True)


def _identity(access: Access, partition: Partition, kind: str, external_id: str) -> dict[str, Any]:
    return {"owner": access.user, "partition": partition, "kind": kind, "external_id": external_id}


def _refuse_retired(identity: dict[str, Any]) -> None:
    if Source.objects.filter(**identity, identity_retired_at__isnull=False).exists():
        raise IdentityRetired(
            "This source identity was retired and accepts no new content.",
            details={"kind": identity["kind"], "id": identity["external_id"]},
        )


def _latest_receipt(source: Source) -> Receipt:
    operation = source.operations.order_by("-queued_at").first()
    if operation is None:  # every stored source has one; recreate it rather than answer without a receipt
        operation = operation_enqueue(source=source)
    operation_restore_if_lost(operation)
    return Receipt(operation=operation, source=source, deduplicated=True)


def _tombstone(source: Source) -> None:
    now = timezone.now()
    source.children.filter(tombstoned_at__isnull=True).update(tombstoned_at=now)
    Source.objects.filter(pk=source.pk).update(tombstoned_at=now)
    # Derived pieces of a replaced version must not be found any more; the text itself stays as history.
    Chunk.objects.filter(source__in=[source, *source.children.all()]).delete()


def _accept(access: Access, source: Source, request_hash: str, counts: dict[str, int]) -> Receipt:
    operation = operation_enqueue(source=source, request_hash=request_hash, counts=counts)
    audit_record(
        actor=access.actor,
        owner=access.user,
        action="source.ingest",
        target=source,
        partition=source.partition,
        after={"kind": source.kind, "externalId": source.external_id, "version": source.version, **counts},
    )
    return Receipt(operation=operation, source=source, deduplicated=False)


def _refresh_title(access: Access, source: Source, title: str) -> None:
    """A display-only change: the label follows, nothing is processed again."""
    if not title or title == source.title:
        return
    before = source.title
    Source.objects.filter(pk=source.pk).update(title=title)
    source.title = title
    audit_record(
        actor=access.actor,
        owner=access.user,
        action="source.retitle",
        target=source,
        partition=source.partition,
        before={"title": before},
        after={"title": title},
    )


def _resolve_parent(access: Access, parent_id: str) -> Source | None:
    """The live parent in the partitions this token reaches (children inherit its partition)."""
    if not parent_id:
        return None
    parents = Source.objects.filter(owner=access.user, external_id=parent_id).select_related("partition")
    if access.reachable_keys is not None:
        parents = parents.filter(partition__key__in=access.reachable_keys)
    parents = parents.order_by("-created_at")
    parent = parents.filter(tombstoned_at__isnull=True).first()
    if parent is None:
        if parents.filter(identity_retired_at__isnull=False).exists():
            raise IdentityRetired("The parent source was retired.", details={"parentId": parent_id})
        raise NotFound("No such parent source.", details={"parentId": parent_id})
    access.check_write(parent.partition)  # children inherit the parent's partition
    return parent


@transaction.atomic
def ingest_conversation(*, access: Access, conversation: ConversationIn, update_existing: bool = False) -> Receipt:
    """Store a conversation and its new messages; messages already stored with the same text are skipped."""
    access.require_scope(Scope.WRITE)
    partition = access.write_partition()
    request_hash = _hash("conversation", partition.pk, asdict(conversation), update_existing)
    _lock_identity(access, partition, SourceKind.CONVERSATION, conversation.id)
    if replay := _replay(access, request_hash):
        return replay
    identity = _identity(access, partition, SourceKind.CONVERSATION, conversation.id)
    _refuse_retired(identity)
    live = Source.objects.live().filter(**identity).first()
    version = 1
    if live is not None and update_existing:
        _tombstone(live)
        version, live = live.version + 1, None
    now = timezone.now()
    if live is None:
        first_time = next((m.timestamp for m in conversation.messages if m.timestamp), None)
        live = Source.objects.create(
            **identity,
            scope=conversation.scope,
            title=conversation.title,
            source_context=conversation.source_context,
            version=version,
            occurred_at=first_time or now,
        )
        created_conversation = True
    else:
        created_conversation = False
    stored, retired = ({}, set()) if created_conversation else _known_turns(access, live, partition, conversation)
    changed = [m.id for m in conversation.messages if m.id in stored and stored[m.id] != _hash(m.content)]
    if changed:
        raise Conflict(
            "Some messages were already stored with other text; message ids must be immutable.",
            details={"messageIds": changed, "hint": "Send updateExisting: true to replace the conversation."},
        )
    fresh = [m for m in conversation.messages if m.id not in stored and m.id not in retired]
    if not fresh and not created_conversation:
        _refresh_title(access, live, conversation.title)
        return _latest_receipt(live)
    base = 0 if created_conversation else _next_ordinal(live)
    try:
        with transaction.atomic():
            _store_messages(access, live, partition, conversation, fresh, base, now)
    except IntegrityError as exc:
        raise Conflict(
            "A message id collides with another source of this partition.",
            details={"messageIds": [m.id for m in fresh]},
        ) from exc
    counts = {"messages": len(fresh)}
    if skipped := len(retired & {m.id for m in conversation.messages}):
        counts["retiredSkipped"] = skipped
    return _accept(access, live, request_hash, counts)


def _known_turns(
    access: Access, live: Source, partition: Partition, conversation: ConversationIn
) -> tuple[dict[str, str], set[str]]:
    """Of the turns this request names: the content hash of each stored live, and the ids of those erased with their
    identity retired (they stay out, however often a sync sends them again). Only these turns are read (through the
    live identity index): a chat host sends each new turn of a long conversation as it happens, and accepting it
    must not read the whole conversation again."""
    sent = [f"{conversation.id}/{m.id}" for m in conversation.messages]
    turns = live.children.filter(
        Q(tombstoned_at__isnull=True) | Q(identity_retired_at__isnull=False),
        owner=access.user,
        partition=partition,
        kind=SourceKind.MESSAGE,
        external_id__in=sent,
    ).values_list("message_id", "content_hash", "tombstoned_at", "identity_retired_at")
    stored, retired = {}, set()
    for message_id, content_hash, tombstoned_at, identity_retired_at in turns:
        if tombstoned_at is None:
            stored[message_id] = content_hash
        if identity_retired_at is not None:
            retired.add(message_id)
    return stored, retired


def _next_ordinal(conversation: Source) -> int:
    last = conversation.children.aggregate(last=Max("ordinal"))["last"]
    return 0 if last is None else last + 1


def _store_messages(
    access: Access,
    live: Source,
    partition: Partition,
    conversation: ConversationIn,
    fresh: list[MessageIn],
    base: int,
    now: datetime,
) -> None:
    copy_rows(
        Source,
        [
            Source(
                owner=access.user,
                partition=partition,
                kind=SourceKind.MESSAGE,
                scope=live.scope,
                external_id=f"{conversation.id}/{message.id}",
                parent=live,
                ordinal=base + index,
                content=message.content,
                content_hash=_hash(message.content),
                version=live.version,
                role=message.role,
                speaker=message.speaker or message.role,
                message_id=message.id,
                thread_id=conversation.id,
                authored_at=message.timestamp,
                occurred_at=message.timestamp or now,
            )
            for index, message in enumerate(fresh)
        ],
    )


@transaction.atomic
def ingest_document(*, access: Access, document: DocumentIn, update_existing: bool = False) -> Receipt:
    """Store a document (or a person's message) as one source."""
    return _ingest_single(
        access=access,
        document=document,
        kind=SourceKind.MESSAGE if document.source_kind == SourceKind.MESSAGE else SourceKind.DOCUMENT,
        content_hash=_hash(document.content),
        fields={"content": document.content},
        update_existing=update_existing,
        request_parts=(asdict(document),),
    )


@transaction.atomic
def ingest_transcript(*, access: Access, transcript: TranscriptIn, update_existing: bool = False) -> Receipt:
    """Store a speaker-attributed transcript; its segments stay structured for chunking."""
    segments = [asdict(segment) for segment in transcript.segments]
    content = "\n".join(line for _, line in render_segments(transcript.segments))
    context = {**transcript.source_context, **({"origin": transcript.origin} if transcript.origin else {})}
    document = DocumentIn(
        id=transcript.id,
        title=transcript.title,
        scope=transcript.scope,
        timestamp=transcript.timestamp,
        source_context=context,
    )
    return _ingest_single(
        access=access,
        document=document,
        kind=SourceKind.TRANSCRIPT,
        content_hash=_hash(content, segments),
        fields={"content": content, "segments": segments},
        update_existing=update_existing,
        request_parts=(asdict(transcript),),
    )


@transaction.atomic
def ingest_file(
    *,
    access: Access,
    document: DocumentIn,
    upload: SpooledUpload,
    filename: str,
    mime_type: str,
    update_existing: bool = False,
) -> Receipt:
    """Keep the original bytes in a blob and queue conversion; an unconvertible file is still kept."""

    def store_blob() -> dict[str, Any]:
        stored = blob_store(owner=access.user, upload=upload, mime_type=mime_type)
        return {"blob": stored.blob, "filename": filename, "mime_type": mime_type}

    return _ingest_single(
        access=access,
        document=document,
        kind=SourceKind.FILE,
        content_hash=upload.sha256,
        fields=store_blob,
        update_existing=update_existing,
        request_parts=(asdict(document), upload.sha256, filename, mime_type),
    )


def ingest_upload(
    *, access: Access, upload: SpooledUpload | None, filename: str, mime_type: str, scope: str
) -> Receipt:
    """A file a person uploads in the web UI: its name is its document id, so uploading a file of the same
    name again replaces the earlier version (a new version of one source, never a second source)."""
    if upload is None:
        raise ValidationFailed("Choose a file to upload.", details={"file": ["This field is required."]})
    name = filename or "upload"
    return ingest_file(
        access=access, document=DocumentIn(id=name, title=name, scope=scope), upload=upload, filename=filename,
        mime_type=mime_type, update_existing=True,
    )  # fmt: skip


def _ingest_single(
    *,
    access: Access,
    document: DocumentIn,
    kind: str,
    content_hash: str,
    fields: dict[str, Any] | Any,
    update_existing: bool,
    request_parts: tuple[Any, ...],
) -> Receipt:
    access.require_scope(Scope.WRITE)
    parent = _resolve_parent(access, document.parent_id)
    partition = parent.partition if parent else access.write_partition()
    request_hash = _hash(kind, partition.pk, *request_parts, update_existing)
    _lock_identity(access, partition, kind, document.id)
    if replay := _replay(access, request_hash):
        return replay
    identity = _identity(access, partition, kind, document.id)
    _refuse_retired(identity)
    live = Source.objects.live().filter(**identity).first()
    version = 1
    if live is not None:
        if update_existing:
            _tombstone(live)
            version = live.version + 1
        elif live.content_hash == content_hash:
            _refresh_title(access, live, document.title)
            return _latest_receipt(live)
        else:
            raise Conflict(
                "A source with this id already exists with other content.",
                details={"id": document.id, "hint": "Send updateExisting: true to replace it."},
            )
    values = fields() if callable(fields) else fields
    source = Source.objects.create(
        **identity,
        scope=parent.scope if parent else document.scope,
        parent=parent,
        title=document.title,
        content_hash=content_hash,
        version=version,
        source_context=document.source_context,
        message_id=document.message_id,
        thread_id=document.thread_id,
        authored_at=document.authored_at,
        participants=list(document.participants),
        occurred_at=document.timestamp or document.authored_at or timezone.now(),
        **values,
    )
    return _accept(access, source, request_hash, {})

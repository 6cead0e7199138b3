"""Ingestion, sources, processing receipts and artifacts over REST."""

from __future__ import annotations

from typing import Any

from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request

from memory import selectors
from memory.access import Access
from memory.api import ingest_serializers as s
from memory.api.base import Endpoint
from memory.api.openapi import BlobOut, SourceOut, anything, count, flag, many, maybe_text, one, shape, text, when
from memory.api.parsers import json_loads_checked
from memory.api.presenters import blob_json, operation_json, source_content_json, source_json
from memory.api.ranges import blob_response
from memory.api.shapes import shaped
from memory.errors import PayloadTooLarge, ValidationFailed
from memory.models import BLOB_MAX_BYTES
from memory.services import ingestion
from memory.services.artifacts import artifact_put, clean_mime_type
from memory.services.blobs import SpooledUpload, read_in_chunks
from memory.services.erasure import source_erase
from memory.services.operations import operation_for_access, operation_retry, operation_view

MessageOut = shape(
    "MessageOut", id=text(), sourceId=text(), role=text(allow_blank=True), speaker=text(allow_blank=True),
    content=text(allow_blank=True), timestamp=when(allow_null=True),
)  # fmt: skip
OriginalOut = type("OriginalOut", (BlobOut,), {"__module__": __name__, "filename": text(allow_blank=True)})
ContentOut = shape(
    "SourceContentOut",
    text=text(allow_blank=True), format=serializers.ChoiceField(choices=["text", "markdown"]),
    messages=many(MessageOut, required=False, help_text="Conversations only."),
    segments=anything(required=False, help_text="Transcripts only."),
    original=one(OriginalOut, required=False, help_text="Where the original file can be read (files only)."),
)  # fmt: skip
IngestFileForm = shape(
    "IngestFileForm",
    file=serializers.FileField(help_text="The original bytes (50 MB at most)."),
    document=text(help_text="JSON: the /ingest/document object without content (or the whole body)."),
    userId=text(required=False), partitionKey=text(required=False), updateExisting=flag(required=False),
)  # fmt: skip
StoredBlobOut = type("StoredBlobOut", (BlobOut,), {"__module__": __name__, "deduplicated": flag()})


def refuse_oversize(request: Request, *, slack: int) -> None:
    """413 from the declared length, before a byte is read or stored."""
    if int(request.META.get("CONTENT_LENGTH") or 0) > BLOB_MAX_BYTES + slack:
        raise PayloadTooLarge("The body is larger than 50 MB.", details={"maxBytes": BLOB_MAX_BYTES})


def _document(data: dict[str, Any], content: str = "") -> ingestion.DocumentIn:
    return ingestion.DocumentIn(
        id=data["id"],
        content=content,
        title=data["title"],
        scope=data["scope"],
        timestamp=data["timestamp"],
        source_context=data["sourceContext"],
        source_kind=data["sourceKind"],
        message_id=data["messageId"],
        thread_id=data["threadId"],
        authored_at=data["authoredAt"],
        participants=[dict(participant) for participant in data["participants"]],
        parent_id=data["parentId"],
    )


class IngestConversation(Endpoint):
    """Store conversation turns (stable message ids). Replays answer the original receipt, deduplicated."""

    tool = "ingest.conversation"
    request_serializer = s.IngestConversationIn
    response_serializer = s.ReceiptOut
    success_status = 202
    example_request = {
        "conversation": {
            "id": "chat_456",
            "messages": [
                {"id": "msg_001", "role": "user", "content": "Let's continue the claims refactor.",
                 "timestamp": "2026-04-26T13:00:00.000Z"},
            ],
        }
    }  # fmt: skip

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        conversation = data["conversation"]
        receipt = ingestion.ingest_conversation(
            access=access,
            conversation=ingestion.ConversationIn(
                id=conversation["id"],
                title=conversation["title"],
                scope=conversation["scope"],
                source_context=conversation["sourceContext"],
                messages=[ingestion.MessageIn(**dict(message)) for message in conversation["messages"]],
            ),
            update_existing=data["updateExisting"],
        )
        return receipt.as_dict()


class IngestDocument(Endpoint):
    """Store a document, or a person's message (`sourceKind: "message"`). The caller chooses the scope."""

    tool = "ingest.document"
    request_serializer = s.IngestDocumentIn
    response_serializer = s.ReceiptOut
    success_status = 202
    example_request = {"document": {"id": "doc_stoicism_notes", "content": "Document text...", "scope": "reference"}}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        document = data["document"]
        receipt = ingestion.ingest_document(
            access=access, document=_document(document, document["content"]), update_existing=data["updateExisting"]
        )
        return receipt.as_dict()


class IngestTranscript(Endpoint):
    """Store a speaker-attributed transcript (segments, or 'Speaker: text' lines)."""

    tool = "ingest.transcript"
    request_serializer = s.IngestTranscriptIn
    response_serializer = s.ReceiptOut
    success_status = 202
    example_request = {
        "transcript": {"id": "meeting_0426", "segments": [{"speaker": "Marcel", "text": "Spec by Friday?"}]}
    }

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        transcript = data["transcript"]
        segments = [ingestion.SegmentIn(**dict(segment)) for segment in transcript.get("segments") or []]
        if not segments:
            segments = ingestion.segments_from_text(transcript["content"])
        receipt = ingestion.ingest_transcript(
            access=access,
            transcript=ingestion.TranscriptIn(
                id=transcript["id"],
                segments=segments,
                title=transcript["title"],
                scope=transcript["scope"],
                timestamp=transcript["timestamp"],
                source_context=transcript["sourceContext"],
                origin=transcript["sourceKind"],
            ),
            update_existing=data["updateExisting"],
        )
        return receipt.as_dict()


class IngestFile(Endpoint):
    """Multipart: a `file` part and a `document` part (the /ingest/document object without content, or the
    whole body with userId / partitionKey / updateExisting). The original bytes are kept (50 MB at most)."""

    tool = "ingest.file"
    request_schema = {"multipart/form-data": IngestFileForm}
    example_request = {"document": {"id": "notes.txt", "title": "Notes"}}
    parser_classes = [MultiPartParser]
    request_serializer = s.IngestFileFieldsIn
    response_serializer = s.ReceiptOut
    success_status = 202

    def parse(self, request: Request) -> dict[str, Any]:
        refuse_oversize(request, slack=1024 * 1024)  # multipart framing and the document part
        parts = request.data
        unknown = sorted(set(parts) - {"document", "file", "userId", "partitionKey", "updateExisting"})
        if unknown:
            raise ValidationFailed("Unknown form parts.", details={name: ["Unknown field."] for name in unknown})
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationFailed("The file part is missing.", details={"file": ["This field is required."]})
        try:
            document = json_loads_checked(parts.get("document") or "")
        except ValueError as exc:
            raise ValidationFailed(
                "The document part must be a JSON object.", details={"document": ["Invalid JSON."]}
            ) from exc
        body = document if isinstance(document, dict) and "document" in document else {"document": document}
        for name in ("userId", "partitionKey", "updateExisting"):
            if name in parts:
                body.setdefault(name, parts[name])
        incoming = shaped(self.request_serializer, data=body)
        incoming.is_valid(raise_exception=True)
        data = dict(incoming.validated_data)
        data["upload"] = upload
        return data

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        upload = data["upload"]
        spooled = SpooledUpload(upload.chunks())
        try:
            receipt = ingestion.ingest_file(
                access=access,
                document=_document(data["document"]),
                upload=spooled,
                filename=upload.name or "",
                mime_type=clean_mime_type(upload.content_type or ""),
                update_existing=data["updateExisting"],
            )
        finally:
            spooled.close()
        return receipt.as_dict()


class SourceProcessingGet(Endpoint):
    """Read a processing receipt. A job that died while the receipt says queued/processing reads as failed
    with PROCESSING_INTERRUPTED (read-only: nothing changes until you retry)."""

    tool = "source.processing.get"
    request_serializer = s.OperationIn
    response_serializer = s.OperationOut
    example_request = {"operationId": "op_01kq54zhdye4a94mjmw0wev9jx"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return operation_json(operation_view(operation_for_access(access, data["operationId"])))


class SourceProcessingRetry(Endpoint):
    """Retry a failed or interrupted operation; CONFLICT if its source changed since."""

    tool = "source.processing.retry"
    request_serializer = s.OperationIn
    response_serializer = s.OperationOut
    success_status = 202
    example_request = {"operationId": "op_01kq54zhdye4a94mjmw0wev9jx"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return operation_json(operation_view(operation_retry(access=access, operation_id=data["operationId"])))


class SourceGet(Endpoint):
    """A source's metadata; with `includeContent`, its text (converted Markdown for files), its messages,
    and where the original file can be read."""

    tool = "source.get"
    response_schema = shape("SourceWithContentOut", source=one(SourceOut), content=one(ContentOut, required=False))
    request_serializer = s.SourceGetIn
    example_request = {"sourceId": "src_01kq54zhdye4a94mjmw0wev9jx", "includeContent": True}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        source = selectors.source_for_access(access, data["sourceId"])
        answer: dict[str, Any] = {"source": source_json(source)}
        if data["includeContent"]:
            answer["content"] = source_content_json(source)
        return answer


class SourceList(Endpoint):
    """Sources newest first, filtered by kind, scope and time; page on with `cursor`."""

    tool = "source.list"
    response_schema = shape("SourcePageOut", sources=many(SourceOut), nextCursor=maybe_text())
    request_serializer = s.SourceListIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        page = selectors.sources_for_access(
            access,
            kind=data.get("kind"),
            scope=data.get("scope"),
            since=data.get("since"),
            until=data.get("until"),
            include_tombstoned=data["includeTombstoned"],
            status=data.get("status"),
            cursor=data.get("cursor"),
            limit=data["limit"],
        )
        return {"sources": [source_json(source) for source in page.sources], "nextCursor": page.next_cursor}


class SourceDelete(Endpoint):
    """Erase a source with everything derived from it (needs `edit`)."""

    tool = "source.delete"
    response_schema = shape(
        "SourceErasedOut", sourceId=text(), erasedSources=count(), erasedBlobs=count(), identityRetired=flag()
    )
    request_serializer = s.SourceDeleteIn
    example_request = {"sourceId": "src_01kq54zhdye4a94mjmw0wev9jx"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        erased = source_erase(access=access, source_id=data["sourceId"], retire_identity=data["retireIdentity"])
        return {"sourceId": erased.source_id, "erasedSources": erased.sources, "erasedBlobs": erased.blobs,
                "identityRetired": erased.retired}  # fmt: skip


class ArtifactPut(Endpoint):
    """PUT the raw bytes (Content-Type is kept); answers the content address. 50 MB at most."""

    tool = "artifact.put"
    response_schema = StoredBlobOut
    success_statuses = (201, 200)  # stored; already stored (deduplicated)
    request_schema = {"application/octet-stream": OpenApiTypes.BINARY}
    query_serializer = s.ArtifactQueryIn
    http_method_names = ["put", "options"]
    parser_classes: list[Any] = []  # the body is streamed straight into a blob, never parsed

    def put(self, request: Request, **kwargs: Any) -> HttpResponseBase:
        return self.respond(request)

    def parse(self, request: Request) -> dict[str, Any]:
        refuse_oversize(request, slack=0)
        query = shaped(s.ArtifactQueryIn, data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        return dict(query.validated_data)

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        spooled = SpooledUpload(read_in_chunks(self.request._request))  # the raw body, hashed as it streams in
        try:
            stored = artifact_put(access=access, upload=spooled, mime_type=self.request.content_type or "")
        finally:
            spooled.close()
        self.success_status = 200 if stored.deduplicated else 201
        return {**blob_json(stored.blob), "deduplicated": stored.deduplicated}


class ArtifactGet(Endpoint):
    """GET the bytes of an artifact or of a file source's original, streamed; supports `Range`."""

    tool = "artifact.get"
    response_schema = OpenApiTypes.BINARY
    answer_media_type = "*/*"  # the artifact's own type
    success_statuses = (200, 206)  # whole; the asked Range
    more_error_statuses = (416,)
    query_serializer = s.ArtifactQueryIn
    http_method_names = ["get", "head", "options"]

    def get(self, request: Request, sha256: str = "", **kwargs: Any) -> HttpResponseBase:
        self.sha256 = sha256
        return self.respond(request)

    def parse(self, request: Request) -> dict[str, Any]:
        query = shaped(s.ArtifactQueryIn, data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        return dict(query.validated_data)

    def handle(self, access: Access, data: dict[str, Any]) -> HttpResponseBase:
        return blob_response(self.request, selectors.blob_for_access(access, self.sha256))


class ArtifactList(Endpoint):
    """Artifacts put by this user, newest first."""

    tool = "artifact.list"
    response_schema = shape("ArtifactPageOut", artifacts=many(BlobOut), nextCursor=maybe_text())
    request_serializer = s.ArtifactListIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        blobs, cursor = selectors.artifacts_for_access(access, cursor=data.get("cursor"), limit=data["limit"])
        return {"artifacts": [blob_json(blob) for blob in blobs], "nextCursor": cursor}

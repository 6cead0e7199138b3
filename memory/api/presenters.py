"""Model objects as the JSON clients read (camelCase), in one place per noun."""

from __future__ import annotations

from typing import Any

from memory.models import Blob, Claim, Node, Source, SourceKind
from memory.services.operations import OperationView


def operation_json(view: OperationView) -> dict[str, Any]:
    operation = view.operation
    return {
        "operationId": operation.pk,
        "sourceId": operation.source_id,
        "sourceVersion": operation.source_version,
        "status": view.status,
        "step": operation.step,
        "stepsDone": operation.steps_done,
        "counts": operation.counts,
        "errorCode": view.error_code or None,
        "errorMessage": view.error_message or None,
        "attempts": operation.attempts,
        "queuedAt": operation.queued_at,
        "startedAt": operation.started_at,
        "finishedAt": operation.finished_at,
    }


def blob_json(blob: Blob) -> dict[str, Any]:
    return {
        "sha256": blob.sha256,
        "size": blob.size,
        "mimeType": blob.mime_type,
        "createdAt": blob.created_at,
        "href": f"/artifact/{blob.sha256}",
    }


def source_json(source: Source) -> dict[str, Any]:
    return {
        "sourceId": source.pk,
        "kind": source.kind,
        "scope": source.scope,
        "id": source.external_id,
        "partitionKey": source.partition.key,
        "parentId": source.parent_id,
        "title": source.title,
        "version": source.version,
        "sourceContext": source.source_context,
        "messageId": source.message_id or None,
        "threadId": source.thread_id or None,
        "role": source.role or None,
        "speaker": source.speaker or None,
        "authoredAt": source.authored_at,
        "participants": source.participants,
        "filename": source.filename or None,
        "mimeType": source.mime_type or None,
        "occurredAt": source.occurred_at,
        "createdAt": source.created_at,
        "tombstonedAt": source.tombstoned_at,
    }


def source_content_json(source: Source) -> dict[str, Any]:
    """The readable text (stored text or converted Markdown), messages for a conversation, and where the
    original payload of a file can be read."""
    content: dict[str, Any] = {"text": source.text, "format": "markdown" if source.kind == SourceKind.FILE else "text"}
    if source.kind == SourceKind.CONVERSATION:
        messages = source.children.filter(tombstoned_at=source.tombstoned_at).order_by("ordinal")
        content["messages"] = [
            {
                "id": message.message_id,
                "sourceId": message.pk,
                "role": message.role,
                "speaker": message.speaker,
                "content": message.content,
                "timestamp": message.authored_at,
            }
            for message in messages
        ]
        content["text"] = "\n".join(f"{m['speaker'] or m['role']}: {m['content']}" for m in content["messages"])
    if source.kind == SourceKind.TRANSCRIPT:
        content["segments"] = source.segments
    if source.blob is not None:
        content["original"] = {**blob_json(source.blob), "filename": source.filename}
    return content


def node_ref(node: Node | None) -> dict[str, Any] | None:
    return None if node is None else {"nodeId": node.pk, "type": node.type, "label": node.label}


def claim_json(claim: Claim) -> dict[str, Any]:
    return {
        "claimId": claim.pk,
        "statement": claim.statement,
        "kind": claim.kind,
        "status": claim.status,
        "origin": claim.origin,
        "scope": claim.scope,
        "partitionKey": claim.partition.key,
        "subject": node_ref(claim.subject),
        "predicate": claim.predicate or None,
        "object": node_ref(claim.object_node),
        "objectValue": claim.object_value,
        "key": claim.key or None,
        "value": claim.value,
        "confidence": claim.confidence,
        "importance": claim.importance,
        "pinned": claim.pinned,
        "extractor": claim.extractor or None,
        "modelName": claim.model_name or None,
        "reason": claim.reason or None,
        "derivedFrom": claim.derived_from_id,
        "supersededBy": claim.superseded_by_id,
        "validFrom": claim.valid_from,
        "validUntil": claim.valid_until,
        "statedAt": claim.stated_at,
        "recordedAt": claim.recorded_at,
        "expiresAt": claim.expires_at,
        "needsReverification": claim.needs_reverification,
        "evidence": [
            {
                "sourceId": evidence.source_id,
                "excerpt": evidence.excerpt,
                "messageId": evidence.message_id or None,
                "authoredAt": evidence.authored_at,
            }
            for evidence in claim.evidence.all()
        ],
    }


def node_json(node: Node, *, aliases: bool = False) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "nodeId": node.pk,
        "type": node.type,
        "label": node.label,
        "summary": node.summary,
        "scope": node.scope,
        "isSelf": node.is_self,
        "partitionKey": node.partition.key,
        "attributes": node.attributes,
        "mergedInto": node.merged_into_id,
        "lastSeenAt": node.last_seen_at,
        "createdAt": node.created_at,
    }
    if aliases:
        answer["aliases"] = [alias.name for alias in node.aliases.order_by("name")]
    return answer

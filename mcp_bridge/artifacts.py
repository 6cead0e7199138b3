"""artifact_put and artifact_get over MCP: the bytes travel inside JSON, so both are capped and reads are
ranged. The artifact itself is the one REST keeps (PUT /artifact, GET /artifact/<sha256>)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.conf import settings
from rest_framework import serializers

from memory import selectors
from memory.access import Access
from memory.api.base import RequestSerializer
from memory.api.presenters import blob_json
from memory.errors import ValidationFailed
from memory.services.artifacts import artifact_put
from memory.services.blobs import SpooledUpload, blob_open

MAX_READ_BYTES = 1024 * 1024


class ArtifactPutIn(RequestSerializer):
    content = serializers.CharField(required=False, trim_whitespace=False, help_text="Text to store (UTF-8).")
    contentBase64 = serializers.CharField(required=False, help_text="Bytes to store, base64-encoded.")
    mimeType = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("content" in attrs) == ("contentBase64" in attrs):
            raise serializers.ValidationError({"content": ["Give exactly one of content and content_base64."]})
        return attrs


class ArtifactGetIn(RequestSerializer):
    sha256 = serializers.RegexField(r"^[0-9a-fA-F]{64}$", help_text="The artifact's content address.")
    offset = serializers.IntegerField(default=0, min_value=0)
    length = serializers.IntegerField(default=256 * 1024, min_value=1, max_value=MAX_READ_BYTES)


def _bytes(data: dict[str, Any]) -> bytes:
    if "content" in data:
        return str(data["content"]).encode()
    try:
        return base64.b64decode(data["contentBase64"], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValidationFailed("content_base64 is not valid base64.", details={"content_base64": [str(exc)]}) from exc


def artifact_store(access: Access, data: dict[str, Any]) -> dict[str, Any]:
    mime_type = data["mimeType"] or ("text/plain; charset=utf-8" if "content" in data else "application/octet-stream")
    upload = SpooledUpload([_bytes(data)], max_bytes=settings.MCP_ARTIFACT_MAX_BYTES)
    try:
        stored = artifact_put(access=access, upload=upload, mime_type=mime_type)
    finally:
        upload.close()
    kept = selectors.blob_for_access(access, stored.blob.sha256)  # read back, as every MCP write answers
    verified = kept.size == upload.size and kept.sha256 == upload.sha256
    return {**blob_json(kept), "deduplicated": stored.deduplicated, "verified_persisted": verified}


def artifact_read(access: Access, data: dict[str, Any]) -> dict[str, Any]:
    blob = selectors.blob_for_access(access, data["sha256"])
    offset = min(data["offset"], blob.size)
    with blob_open(blob) as stream:
        stream.seek(offset)
        piece = stream.read(data["length"])
    end = offset + len(piece)
    answer = {**blob_json(blob), "offset": offset, "length": len(piece)}
    answer["next_offset"] = end if end < blob.size else None
    if blob.mime_type.startswith("text/"):
        try:
            return {**answer, "content": piece.decode()}
        except UnicodeDecodeError:
            pass  # cut inside a character, or not UTF-8 after all: send the bytes
    return {**answer, "content_base64": base64.b64encode(piece).decode()}

"""Data rights over REST: the export of a whole memory, streamed (docs/architecture.md, "Archive format")."""

from __future__ import annotations

import re
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers

from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.streaming import streamed
from memory.models import Scope
from memory.services.export import ARCHIVE_MIME_TYPE, export_prepare, export_scope


class ExportIn(RequestSerializer):
    partition = serializers.CharField(
        required=False,
        max_length=64,
        help_text="Export only this partition (its key). Default: every partition the token reaches.",
    )


class Export(Endpoint):
    """Everything of this user as one versioned archive, streamed as a tar: manifest.json (format version,
    row counts, SHA-256 of every file), one JSON-lines file per kind, and blobs/<sha256> for the original
    files and artifacts (docs/architecture.md, "Archive format"). Needs `maintenance`. `partition` limits it
    to one partition; restore it with `manage.py import_memory`."""

    tool = "maintenance.export"
    request_serializer = ExportIn
    response_schema = OpenApiTypes.BINARY
    answer_media_type = ARCHIVE_MIME_TYPE
    example_request = {"partition": "memory:personal"}

    def handle(self, access: Access, data: dict[str, Any]) -> StreamingHttpResponse:
        access.require_scope(Scope.MAINTENANCE)
        keys = export_scope(access, data.get("partition"))
        prepared = export_prepare(owner=access.user, partition_keys=keys, actor=access.actor)
        response = StreamingHttpResponse(
            streamed(self.request._request, prepared.stream()), content_type=ARCHIVE_MIME_TYPE
        )
        filename = re.sub(r"[^A-Za-z0-9._-]", "_", prepared.filename)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response

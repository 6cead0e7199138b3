"""Artifacts (seeds/004): raw bytes put by agents, content-addressed per owner."""

from __future__ import annotations

import re

from django.db import transaction

from memory.access import Access
from memory.errors import ValidationFailed
from memory.models import Scope
from memory.services.audit import audit_record
from memory.services.blobs import SpooledUpload, StoredBlob, blob_store

_MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,62}/[a-z0-9][a-z0-9!#$&^_.+-]{0,62}$")


def clean_mime_type(value: str) -> str:
    """A `type/subtype` as sent (parameters dropped), or application/octet-stream for anything else."""
    mime = (value or "").split(";")[0].strip().lower()
    return mime if _MIME.fullmatch(mime) else "application/octet-stream"


@transaction.atomic
def artifact_put(*, access: Access, upload: SpooledUpload, mime_type: str) -> StoredBlob:
    """Keep the bytes (once per owner) and list them as an artifact."""
    access.require_scope(Scope.WRITE)
    if upload.size == 0:
        raise ValidationFailed("The artifact is empty.", details={"body": ["Send the bytes as the body."]})
    stored = blob_store(owner=access.user, upload=upload, mime_type=clean_mime_type(mime_type), is_artifact=True)
    if not stored.deduplicated:
        audit_record(
            actor=access.actor,
            owner=access.user,
            action="artifact.put",
            target=stored.blob,
            after={"sha256": stored.blob.sha256, "size": stored.blob.size},
        )
    return stored

"""Artifacts (seeds/004): raw bytes put by agents, content-addressed per owner."""

from __future__ import annotations

import re
from dataclasses import replace

from django.db import transaction
from django.db.models import Q

from memory.access import Access
from memory.errors import ValidationFailed
from memory.models import ArtifactPlacement, Blob, Partition, Scope
from memory.services.audit import audit_record
from memory.services.blobs import SpooledUpload, StoredBlob, blob_store

_MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,62}/[a-z0-9][a-z0-9!#$&^_.+-]{0,62}$")


def clean_mime_type(value: str) -> str:
    """A `type/subtype` as sent (parameters dropped), or application/octet-stream for anything else."""
    mime = (value or "").split(";")[0].strip().lower()
    return mime if _MIME.fullmatch(mime) else "application/octet-stream"


@transaction.atomic
def artifact_put(*, access: Access, upload: SpooledUpload, mime_type: str) -> StoredBlob:
    """Keep the bytes (once per owner) and list them as an artifact of the request's partition.

    `deduplicated` is true only when the bytes were already stored where this token reaches: bytes kept for
    a partition out of its reach must not reveal themselves."""
    access.require_scope(Scope.WRITE)
    partition = access.write_partition()
    if upload.size == 0:
        raise ValidationFailed("The artifact is empty.", details={"body": ["Send the bytes as the body."]})
    stored = blob_store(owner=access.user, upload=upload, mime_type=clean_mime_type(mime_type), is_artifact=True)
    _, placed = ArtifactPlacement.objects.get_or_create(
        blob=stored.blob, partition=partition, defaults={"owner": access.user}
    )
    if stored.deduplicated and placed and not _all_within_reach(access, stored.blob):
        stored = replace(stored, deduplicated=False)
    if placed:
        audit_record(
            actor=access.actor,
            owner=access.user,
            action="artifact.put",
            target=stored.blob,
            partition=partition,
            after={"sha256": stored.blob.sha256, "size": stored.blob.size},
        )
    return stored


def _all_within_reach(access: Access, blob: Blob) -> bool:
    """Whether every partition holding the blob (as an artifact or a file's original) is one this token reaches."""
    holding = Partition.objects.filter(Q(artifact_placements__blob=blob) | Q(sources__blob=blob)).distinct()
    return all(access.can_reach(partition) for partition in holding)

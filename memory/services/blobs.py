"""Blobs: original bytes, content-addressed and deduplicated per owner, capped at 50 MB."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Protocol

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction

from memory.errors import PayloadTooLarge
from memory.models import BLOB_MAX_BYTES, Blob, User

_READ_SIZE = 1024 * 1024


@dataclass(frozen=True)
class StoredBlob:
    blob: Blob
    deduplicated: bool


class SpooledUpload:
    """Bytes read once from a request, hashed on the way in, refused past the cap before anything is stored."""

    def __init__(self, chunks: Iterable[bytes], *, max_bytes: int = BLOB_MAX_BYTES) -> None:
        self.file = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # noqa: SIM115 (closed by close())
        digest = hashlib.sha256()
        size = 0
        for chunk in chunks:
            size += len(chunk)
            if size > max_bytes:
                self.file.close()
                raise PayloadTooLarge(
                    f"The file is larger than {max_bytes // (1024 * 1024)} MB.", details={"maxBytes": max_bytes}
                )
            digest.update(chunk)
            self.file.write(chunk)
        self.file.seek(0)
        self.size = size
        self.sha256 = digest.hexdigest()

    def close(self) -> None:
        self.file.close()


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def read_in_chunks(stream: Readable) -> Iterator[bytes]:
    while chunk := stream.read(_READ_SIZE):
        yield chunk


def blob_storage_name(owner: User, sha256: str) -> str:
    """Where the bytes of `sha256` lie for this owner (relative to the storage root)."""
    return f"{owner.pk}/{sha256[:2]}/{sha256}"


def blob_store(*, owner: User, upload: SpooledUpload, mime_type: str, is_artifact: bool = False) -> StoredBlob:
    """Keep the bytes once per owner. Returns the existing blob (deduplicated) when the hash is known."""
    existing = Blob.objects.filter(owner=owner, sha256=upload.sha256).first()
    if existing is not None:
        if is_artifact and not existing.is_artifact:
            Blob.objects.filter(pk=existing.pk).update(is_artifact=True)
        return StoredBlob(blob=existing, deduplicated=True)
    name = blob_storage_name(owner, upload.sha256)
    if default_storage.exists(name) and default_storage.size(name) != upload.size:
        default_storage.delete(name)  # a truncated leftover of a crashed write: never reuse it
    if not default_storage.exists(name):
        # Bytes first, row second: a crash between them leaves an unreferenced file, never a row without bytes.
        name = default_storage.save(name, File(upload.file))
    try:
        with transaction.atomic():
            blob = Blob.objects.create(
                owner=owner,
                sha256=upload.sha256,
                size=upload.size,
                mime_type=mime_type or "application/octet-stream",
                storage_name=name,
                is_artifact=is_artifact,
            )
    except IntegrityError:  # the same bytes arrived concurrently
        return StoredBlob(blob=Blob.objects.get(owner=owner, sha256=upload.sha256), deduplicated=True)
    return StoredBlob(blob=blob, deduplicated=False)


def blob_open(blob: Blob) -> IO[bytes]:
    return default_storage.open(blob.storage_name, "rb")


def blob_delete_if_unreferenced(blob_id: str) -> bool:
    """Erase a blob's row and bytes when no source uses it and it was never put as an artifact."""
    blob = Blob.objects.filter(pk=blob_id).first()
    if blob is None or blob.is_artifact or blob.sources.exists():
        return False
    name = blob.storage_name
    blob.delete()
    transaction.on_commit(lambda: default_storage.delete(name))
    return True

"""One user's memory (all of it, or some partitions) as one versioned archive: a tar stream holding
`manifest.json`, one JSON-lines file per kind of row and `blobs/<sha256>` for every original file and
artifact it covers (docs/architecture.md, "Archive format"). memory.services.archive_import reads it back.

Rows are read in one snapshot and spooled to temporary files (a few MB in memory, then disk) so the manifest,
with each file's row count and SHA-256, can come first; the tar is then framed by hand, a piece at a time, so
neither the rows nor the blobs are ever held whole in memory.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import tempfile
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import IO, Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection, models, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Q, QuerySet
from django.utils import timezone

from memory.access import Access, Actor
from memory.errors import Conflict, NotFound
from memory.models import (
    BLOB_MAX_BYTES,
    AccessToken,
    AgentSession,
    Alias,
    ArtifactPlacement,
    Blob,
    Chunk,
    Claim,
    Evidence,
    Feedback,
    MemoryEvent,
    Node,
    Partition,
    Scope,
    Scratchpad,
    SessionEvent,
    Source,
    User,
)
from memory.services.artifacts import artifact_put
from memory.services.audit import audit_record
from memory.services.blobs import SpooledUpload, blob_open, read_in_chunks
from metrics.models import MetricDefinition, Observation

FORMAT_NAME = "memory-archive"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
ARCHIVE_MIME_TYPE = "application/x-tar"
BLOB_DIR = "blobs/"
_SPOOL_BYTES = 4 * 1024 * 1024
_BLOCK = tarfile.BLOCKSIZE
# Never in an archive: the owner (implied), vectors (recomputed on import), generated search columns, where a
# blob lies on this server's disk, and token secrets (only their SHA-256 is stored; it is left out too).
_NEVER = frozenset({"owner", "embedding", "embedding_model", "search_vector", "storage_name", "secret_hash"})

Rows = Callable[[User, list[str], bool], QuerySet[Any]]


@dataclass(frozen=True)
class Kind:
    """One JSON-lines file: which rows of the owner (`rows(owner, partition_ids, whole)`) and whether the
    importer restores them (token metadata is exported for the record only: a token without its secret is
    of no use)."""

    name: str
    model: type[models.Model]
    rows: Rows
    restored: bool = True

    @property
    def filename(self) -> str:
        return f"{self.name}.jsonl"

    @property
    def fields(self) -> list[models.Field[Any, Any]]:
        return [
            column
            for column in self.model._meta.concrete_fields
            if column.name not in _NEVER and not getattr(column, "generated", False)
        ]


def _in(model: type[models.Model], path: str = "partition_id") -> Rows:
    return lambda owner, ids, whole: model._default_manager.filter(owner=owner, **{f"{path}__in": ids})


def _tokens(owner: User, ids: list[str], whole: bool) -> QuerySet[Any]:
    return AccessToken.objects.filter(owner=owner) if whole else AccessToken.objects.none()


def _blobs(owner: User, ids: list[str], whole: bool) -> QuerySet[Any]:
    used = Q(sources__partition_id__in=ids) | Q(placements__partition_id__in=ids)
    return Blob.objects.filter(used, owner=owner).distinct()


def _events(owner: User, ids: list[str], whole: bool) -> QuerySet[Any]:
    # Audit rows about no partition (tokens, the account) belong to a whole export only.
    about = Q(partition_id__in=ids) | Q(partition__isnull=True) if whole else Q(partition_id__in=ids)
    return MemoryEvent.objects.filter(about, owner=owner)


# In the order the importer writes them. Partitions first: everything else lives in one.
KINDS: tuple[Kind, ...] = (
    Kind("partitions", Partition, lambda owner, ids, whole: Partition.objects.filter(owner=owner, id__in=ids)),
    Kind("access_tokens", AccessToken, _tokens, restored=False),
    Kind("blobs", Blob, _blobs),
    Kind("artifact_placements", ArtifactPlacement, _in(ArtifactPlacement)),
    Kind("sources", Source, _in(Source)),
    Kind("chunks", Chunk, _in(Chunk)),
    Kind("nodes", Node, _in(Node)),
    Kind("aliases", Alias, _in(Alias)),
    Kind("claims", Claim, _in(Claim)),
    Kind("evidence", Evidence, _in(Evidence, "claim__partition_id")),
    Kind("scratchpads", Scratchpad, _in(Scratchpad)),
    Kind("agent_sessions", AgentSession, _in(AgentSession)),
    Kind("session_events", SessionEvent, _in(SessionEvent, "session__partition_id")),
    Kind("metric_definitions", MetricDefinition, _in(MetricDefinition)),
    Kind("metric_observations", Observation, _in(Observation, "definition__partition_id")),
    Kind("feedback", Feedback, _in(Feedback)),
    Kind("memory_events", MemoryEvent, _events),
)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()  # full precision, with its offset (UTC as +00:00)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def row_line(row: dict[str, Any]) -> bytes:
    return (json.dumps(row, default=_json_default, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


@dataclass
class Spooled:
    """One member of the archive, ready to be framed: its bytes (a spooled file) or a blob on disk."""

    name: str
    size: int
    sha256: str
    rows: int | None = None
    file: IO[bytes] | None = None
    blob: Blob | None = None

    def manifest_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "bytes": self.size, "sha256": self.sha256}
        return entry if self.rows is None else {**entry, "rows": self.rows}

    def pieces(self) -> Iterator[bytes]:
        if self.file is not None:
            self.file.seek(0)
            yield from read_in_chunks(self.file)
            return
        assert self.blob is not None
        with blob_open(self.blob) as stream:
            yield from read_in_chunks(stream)


@dataclass
class PreparedExport:
    """Everything an archive holds, read in one snapshot; `stream()` frames it as a tar."""

    manifest: dict[str, Any]
    members: list[Spooled] = field(default_factory=list)

    @property
    def filename(self) -> str:
        stamp = self.manifest["created_at"][:19].replace("-", "").replace(":", "")
        return f"memory-{self.manifest['user']['username']}-{stamp}Z.tar"

    def stream(self) -> Generator[bytes]:
        """The tar, a piece at a time: a header, the member's bytes in 1 MB reads, padding; two zero blocks
        and the record padding at the end. Closes the spooled files when done or abandoned."""
        written = 0
        mtime = int(datetime.fromisoformat(self.manifest["created_at"]).timestamp())
        manifest = json.dumps(self.manifest, indent=2, ensure_ascii=False).encode()
        try:
            for name, size, pieces in (
                (MANIFEST, len(manifest), iter((manifest,))),
                *((member.name, member.size, member.pieces()) for member in self.members),
            ):
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = size, mtime, 0o644
                header = info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="strict")
                yield header
                sent = 0
                for piece in pieces:
                    sent += len(piece)
                    yield piece
                if sent != size:  # the bytes changed under us: better a broken stream than a wrong archive
                    raise Conflict(f"{name} changed while it was exported ({sent} bytes, {size} expected).")
                padding = -size % _BLOCK
                yield tarfile.NUL * padding
                written += len(header) + size + padding
            end = 2 * _BLOCK
            yield tarfile.NUL * (end + (-(written + end) % tarfile.RECORDSIZE))
        finally:
            self.close()

    def close(self) -> None:
        for member in self.members:
            if member.file is not None:
                member.file.close()


def export_prepare(*, owner: User, partition_keys: list[str] | None, actor: Actor) -> PreparedExport:
    """Read one user's memory for an archive: every partition (`partition_keys` None) or the ones named.

    A whole export also carries token metadata and the audit rows about no partition. Raises Conflict when
    an original file is missing or damaged on disk (the archive would be wrong)."""
    whole = partition_keys is None
    partitions = list(Partition.objects.filter(owner=owner).order_by("key"))
    if partition_keys is not None:
        partitions = [partition for partition in partitions if partition.key in set(partition_keys)]
    ids = [partition.id for partition in partitions]
    prepared = PreparedExport(manifest={})
    try:
        with _snapshot():
            for kind in KINDS:
                prepared.members.append(_spool(kind, kind.rows(owner, ids, whole).order_by("pk")))
            blobs = list(_blobs(owner, ids, whole).order_by("sha256"))
        prepared.members.extend(_blob_member(blob) for blob in blobs)
    except BaseException:
        prepared.close()
        raise
    prepared.manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "app_version": settings.PROJECT_VERSION,
        "migrations": _migrations(),
        "user": {"id": owner.pk, "username": owner.username, "external_id": owner.external_id},
        "whole": whole,
        "partitions": [{"id": partition.id, "key": partition.key} for partition in partitions],
        "created_at": timezone.now().isoformat(),
        "files": [member.manifest_entry() for member in prepared.members],
    }
    rows = {member.name: member.rows for member in prepared.members if member.rows}
    audit_record(
        actor=actor,
        owner=owner,
        action="memory.export",
        target=owner,
        after={"partitions": [partition.key for partition in partitions], "rows": rows, "blobs": len(blobs)},
    )
    return prepared


class _snapshot:
    """A read-only REPEATABLE READ transaction, so every file of the archive sees the same moment. Inside an
    enclosing transaction (a test, a caller's atomic block) that transaction's view is used as it is."""

    def __enter__(self) -> None:
        self.block: Any = None
        if not connection.in_atomic_block:
            self.block = transaction.atomic()
            self.block.__enter__()
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def __exit__(self, *exc: Any) -> None:
        if self.block is not None:
            self.block.__exit__(*exc)


def _spool(kind: Kind, rows: QuerySet[Any]) -> Spooled:
    columns = kind.fields
    names = [column.attname for column in columns]
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115 (closed by PreparedExport)
    digest, size, count = hashlib.sha256(), 0, 0
    for values in rows.values_list(*names).iterator(chunk_size=2000):
        line = row_line(dict(zip(names, values, strict=True)))
        spool.write(line)
        digest.update(line)
        size += len(line)
        count += 1
    return Spooled(name=kind.filename, size=size, sha256=digest.hexdigest(), rows=count, file=spool)


def _blob_member(blob: Blob) -> Spooled:
    if not default_storage.exists(blob.storage_name) or default_storage.size(blob.storage_name) != blob.size:
        raise Conflict(
            f"The original {blob.sha256} is missing or damaged on disk, so the archive would be incomplete.",
            details={"sha256": blob.sha256},
        )
    return Spooled(name=f"{BLOB_DIR}{blob.sha256}", size=blob.size, sha256=blob.sha256, blob=blob)


def _migrations() -> dict[str, str]:
    """The newest applied migration of each app whose rows the archive holds."""
    applied = MigrationRecorder.Migration.objects.filter(app__in=["memory", "metrics"]).values_list("app", "name")
    newest: dict[str, str] = {}
    for app, name in applied:
        newest[app] = max(newest.get(app, ""), name)
    return newest


def export_scope(access: Access, partition: str | None) -> list[str] | None:
    """The partition keys an export for this request covers: the one named, else every partition the token
    reaches (None: all of the user's, a whole export). A key out of reach is not found."""
    if partition is not None:
        found = Partition.objects.filter(owner=access.user, key=partition).first()
        if found is None or not access.can_reach(found):
            raise NotFound("No such partition.", details={"partition": partition})
        return [partition]
    return None if access.reachable_keys is None else sorted(access.reachable_keys)


def export_to_artifact(*, access: Access, partition: str | None) -> Blob:
    """The archive stored as an artifact of the request's partition (for clients that cannot take a stream,
    such as an MCP tool result): fetch it with GET /artifact/<sha256>. At most BLOB_MAX_BYTES."""
    access.require_scope(Scope.MAINTENANCE)
    prepared = export_prepare(owner=access.user, partition_keys=export_scope(access, partition), actor=access.actor)
    pieces = prepared.stream()
    try:
        upload = SpooledUpload(pieces, max_bytes=BLOB_MAX_BYTES)
    finally:
        pieces.close()
    try:
        return artifact_put(access=access, upload=upload, mime_type=ARCHIVE_MIME_TYPE).blob
    finally:
        upload.close()

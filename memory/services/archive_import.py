"""Restore an archive of memory.services.export into an empty account (docs/architecture.md, "Archive format").

Nothing is written until the whole archive has been read and every file matched its checksum; the rows then go
in one transaction, the original files into the blob store, and vectors are computed afterwards (they are never
in an archive). Public ids are kept, so links, citations and ids a client kept still work; when one of them
already exists on this server (the original account is still here), `new_ids` maps every id to a new one,
deterministically, and rewrites every reference to it, including ids inside audit rows and JSON fields.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import DatabaseError, connection, models, transaction

from memory.access import Actor
from memory.embeddings import EmbedderUnavailable, get_embedder
from memory.errors import Conflict, ValidationFailed
from memory.ids import PublicIdField
from memory.models import (
    AccessToken,
    AgentSession,
    Blob,
    Chunk,
    Claim,
    Feedback,
    Node,
    Partition,
    Scratchpad,
    Source,
    User,
)
from memory.services.audit import audit_record
from memory.services.blobs import blob_storage_name, read_in_chunks
from memory.services.embeddings import (
    vectors_follow,
)
from memory.services.export import BLOB_DIR, FORMAT_NAME, FORMAT_VERSION, KINDS, MANIFEST, Kind
from metrics.models import MetricDefinition

logger = logging.getLogger("memory.archive")
_PUBLIC_ID = re.compile(r"\b[a-z]+_[0-9a-z]{26}\b")
_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_BATCH = 1000


@dataclass
class ImportResult:
    rows: dict[str, int]
    blobs: int
    new_ids: bool
    vectors: dict[str, int] | None = None  # None: the embedder was unavailable, the vectors were queued
    id_map: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass
class _Archive:
    manifest: dict[str, Any]
    rows: dict[str, list[dict[str, Any]]]
    blob_members: dict[str, tarfile.TarInfo]
    tar: tarfile.TarFile


def archive_import(*, archive: IO[bytes], owner: User, new_ids: bool = False, actor: Actor) -> ImportResult:
    """Restore `archive` (a seekable file) into `owner`'s account, which must hold no memory yet.

    Raises ValidationFailed for an archive that is damaged, of another format version or inconsistent, and
    Conflict for an account that is not empty or an id that exists already (without `new_ids`)."""
    try:
        tar = tarfile.open(fileobj=archive, mode="r:*")  # noqa: SIM115 (closed below)
    except (tarfile.TarError, OSError) as exc:
        raise ValidationFailed(
            "This is not a memory archive (not a tar file).", details={"archive": [str(exc)]}
        ) from exc
    with tar:
        read = _read(tar)
        written: list[str] = []
        try:
            result = _restore(read, owner=owner, new_ids=new_ids, actor=actor, written=written)
        except BaseException:
            for name in written:  # the rows were rolled back: so go the bytes written for them
                default_storage.delete(name)
            raise
    result.vectors = _embed(owner)
    return result


def _read(tar: tarfile.TarFile) -> _Archive:
    """The manifest checked, every member checked against it, the rows parsed. Nothing is written."""
    members = {member.name: member for member in tar.getmembers() if member.isfile()}
    if MANIFEST not in members:
        raise ValidationFailed("The archive has no manifest.json.", details={"archive": ["No manifest."]})
    manifest = _json(_bytes(tar, members[MANIFEST]), MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise ValidationFailed(f"This is not a {FORMAT_NAME} archive.", details={"format": manifest.get("format")})
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValidationFailed(
            f"The archive is format version {manifest.get('format_version')}; this server reads version "
            f"{FORMAT_VERSION}.",
            details={"formatVersion": manifest.get("format_version"), "supported": [FORMAT_VERSION]},
        )
    try:
        listed = {str(entry["name"]): entry for entry in manifest["files"]}
        assert all(isinstance(entry["sha256"], str) and isinstance(entry["bytes"], int) for entry in listed.values())
    except (KeyError, TypeError, AssertionError) as exc:
        raise ValidationFailed("The manifest's file list is malformed.", details={"files": [str(exc)]}) from exc
    unlisted = sorted(set(members) - set(listed) - {MANIFEST})
    missing = sorted(set(listed) - set(members))
    if unlisted or missing:
        raise ValidationFailed(
            "The archive does not match its manifest.", details={"unlisted": unlisted, "missing": missing}
        )
    for name, entry in listed.items():
        digest, size = hashlib.sha256(), 0
        for piece in _pieces(tar, members[name]):
            digest.update(piece)
            size += len(piece)
        named = name.removeprefix(BLOB_DIR) if name.startswith(BLOB_DIR) else entry["sha256"]
        if digest.hexdigest() != entry["sha256"] or size != entry["bytes"] or named != entry["sha256"]:
            raise ValidationFailed(
                f"The archive is damaged: {name} does not match its checksum. Nothing was imported.",
                details={"file": name},
            )
    rows = {
        kind.name: _lines(tar, members[kind.filename], kind.filename)
        for kind in KINDS
        if kind.restored and kind.filename in members
    }
    blob_members = {name.removeprefix(BLOB_DIR): members[name] for name in members if name.startswith(BLOB_DIR)}
    return _Archive(manifest=manifest, rows=rows, blob_members=blob_members, tar=tar)


def _pieces(tar: tarfile.TarFile, member: tarfile.TarInfo) -> Iterator[bytes]:
    stream = tar.extractfile(member)
    assert stream is not None  # a regular file
    with stream:
        yield from read_in_chunks(stream)


def _bytes(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    return b"".join(_pieces(tar, member))


def _json(data: bytes, name: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationFailed(f"{name} is not valid JSON.", details={"file": name, "error": str(exc)}) from exc


def _lines(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str) -> list[dict[str, Any]]:
    rows = [_json(line, name) for line in _bytes(tar, member).splitlines() if line.strip()]
    if not all(isinstance(row, dict) for row in rows):
        raise ValidationFailed(f"{name} holds a line that is not a JSON object.", details={"file": name})
    return rows


@transaction.atomic
def _restore(read: _Archive, *, owner: User, new_ids: bool, actor: Actor, written: list[str]) -> ImportResult:
    owner = User.objects.select_for_update().get(pk=owner.pk)
    _require_empty(owner)
    keys = [row.get("key") for row in read.rows.get("partitions", [])]
    # The account is empty, so a partition it already has under an archived key (memory:personal, made with
    # the user) holds nothing: it gives way to the archived one.
    Partition.objects.filter(owner=owner, key__in=keys).delete()
    public = {row["id"] for kind in KINDS if _public(kind) for row in read.rows.get(kind.name, []) if "id" in row}
    id_map = {old: _derived(old, owner.pk) for old in sorted(public)} if new_ids else {old: old for old in public}
    if not new_ids:
        _refuse_taken(read)
    old_owner = read.manifest.get("user", {}).get("id")
    counts: dict[str, int] = {}
    sources: dict[str, Source] = {}
    try:
        for kind in KINDS:
            rows = read.rows.get(kind.name)
            if rows is None:
                continue
            objects = [_instance(kind, row, owner, old_owner, id_map, remap=new_ids) for row in rows]
            for obj in objects:
                if isinstance(obj, Blob):
                    obj.storage_name = blob_storage_name(owner, obj.sha256)
                elif isinstance(obj, Source):
                    sources[obj.pk] = obj
                elif isinstance(obj, Chunk) and obj.source_id in sources:
                    # Its source's, whatever the archive says (archives made before chunks kept them lack them).
                    obj.take_scope_and_time(sources[obj.source_id])
            kind.model._default_manager.bulk_create(objects, batch_size=_BATCH)
            _keep_auto_now(kind, rows, id_map)
            counts[kind.name] = len(objects)
        connection.check_constraints()  # deferred foreign keys: a dangling one fails here, inside the block
    except (DatabaseError, ValueError, TypeError) as exc:
        raise ValidationFailed(
            "The archive does not fit this server's data model; nothing was imported.", details={"error": str(exc)}
        ) from exc
    blobs = Blob.objects.filter(owner=owner)
    for blob in blobs:
        member = read.blob_members.get(blob.sha256)
        if member is None:
            raise ValidationFailed(f"The archive lists blob {blob.sha256} but has no bytes for it.")
        _write_blob(read.tar, member, blob.storage_name, written)
    audit_record(
        actor=actor,
        owner=owner,
        action="memory.import",
        target=owner,
        after={"rows": counts, "newIds": new_ids, "exportedAt": read.manifest.get("created_at")},
    )
    return ImportResult(rows=counts, blobs=len(blobs), new_ids=new_ids, id_map=id_map)


_HOLDINGS: tuple[tuple[str, type[models.Model]], ...] = (
    ("sources", Source), ("nodes", Node), ("claims", Claim), ("metrics", MetricDefinition),
    ("sessions", AgentSession), ("blobs", Blob), ("feedback", Feedback),
)  # fmt: skip


def _require_empty(owner: User) -> None:
    held = {name: model._default_manager.filter(owner=owner).count() for name, model in _HOLDINGS}
    held["scratchpads"] = Scratchpad.objects.filter(owner=owner).exclude(content="").count()
    held = {name: count for name, count in held.items() if count}
    if held:
        listed = ", ".join(f"{count} {name}" for name, count in held.items())
        raise Conflict(
            f"The account {owner.username!r} already holds memory ({listed}). An archive is restored only into "
            "an empty account: import it into a new one.",
            details=held,
        )


def _public(kind: Kind) -> bool:
    return isinstance(kind.model._meta.pk, PublicIdField)


def _refuse_taken(read: _Archive) -> None:
    for kind in KINDS:
        ids = [row["id"] for row in read.rows.get(kind.name, []) if "id" in row] if _public(kind) else []
        for start in range(0, len(ids), _BATCH):
            taken = list(kind.model._default_manager.filter(pk__in=ids[start : start + _BATCH]).values_list("pk"))
            if taken:
                raise Conflict(
                    f"Ids of this archive exist on this server already (e.g. {taken[0][0]}, in {kind.name}): the "
                    "account it came from is probably still here. Import with --new-ids (newIds) to give every "
                    "row a new id, or erase the original account first.",
                    details={"kind": kind.name, "id": taken[0][0], "option": "--new-ids"},
                )


def _derived(old: str, salt: int) -> str:
    """A new id for `old`, the same for every run into the same account: its ULID time part is kept (ids
    still sort by creation) and the random part comes from a hash of the account and the old id."""
    prefix, _, ulid = old.rpartition("_")
    number = int.from_bytes(hashlib.sha256(f"{salt}:{old}".encode()).digest()[:10])
    tail = "".join(_CROCKFORD[(number >> shift) & 31] for shift in range(75, -1, -5))
    head = ulid[:10] if len(ulid) == 26 else tail[:10]
    return f"{prefix}_{head}{tail}"


def _instance(
    kind: Kind, row: dict[str, Any], owner: User, old_owner: Any, id_map: dict[str, str], *, remap: bool
) -> models.Model:
    values: dict[str, Any] = {}
    for column in kind.fields:
        name = column.attname
        if name not in row:
            continue
        value = row[name]
        if column.primary_key:
            if not _public(kind):
                continue  # row numbers (aliases, evidence, events) are this server's: fresh ones are given
            value = id_map[value]
        elif column.is_relation and value is not None:
            value = _reference(kind, column, value, owner, old_owner, id_map)
        elif remap:
            value = _rewrite(value, id_map)
        values[name] = value
    values["owner_id"] = owner.pk
    return kind.model(**values)


def _reference(
    kind: Kind, column: models.Field[Any, Any], value: Any, owner: User, old_owner: Any, id_map: dict[str, str]
) -> Any:
    target = column.related_model
    if target is User:
        return owner.pk if value == old_owner else None  # an admin who acted is not part of the archive
    if target is AccessToken:
        return None  # tokens are not restored
    if value in id_map:
        return id_map[value]
    if column.null:
        return None  # outside a partition-only archive (a claim it cited in another partition)
    raise ValidationFailed(
        f"{kind.filename} refers to {value}, which the archive does not hold.",
        details={"file": kind.filename, "field": column.attname, "id": value},
    )


def _rewrite(value: Any, id_map: dict[str, str]) -> Any:
    """Ids mentioned inside text and JSON (audit targets, before/after, metadata) follow the new ids."""
    if isinstance(value, str):
        return _PUBLIC_ID.sub(lambda match: id_map.get(match.group(0), match.group(0)), value)
    if isinstance(value, list):
        return [_rewrite(item, id_map) for item in value]
    if isinstance(value, dict):
        return {_rewrite(key, id_map): _rewrite(item, id_map) for key, item in value.items()}
    return value


def _keep_auto_now(kind: Kind, rows: list[dict[str, Any]], id_map: dict[str, str]) -> None:
    """bulk_create stamps `auto_now` fields with the present; put the archived times back."""
    model = kind.model
    for column in model._meta.concrete_fields:
        if not getattr(column, "auto_now", False):
            continue
        key = "id" if _public(kind) else "partition_id"  # scratchpads: one per partition
        pairs = [
            (id_map.get(row[key], row[key]), row[column.attname])
            for row in rows
            if row.get(column.attname) and row.get(key)
        ]
        if not pairs:
            continue
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {model._meta.db_table} AS row SET {column.column} = batch.at "  # noqa: S608 (names from the model; values are parameters)
                f"FROM unnest(%s::text[], %s::timestamptz[]) AS batch(key, at) WHERE row.{key} = batch.key",
                [[key_ for key_, _ in pairs], [at for _, at in pairs]],
            )


def _write_blob(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str, written: list[str]) -> None:
    if default_storage.exists(name):
        if default_storage.size(name) == member.size:
            return  # the same bytes are there already (content-addressed)
        default_storage.delete(name)  # a truncated leftover
    stream = tar.extractfile(member)
    assert stream is not None
    with stream:
        saved = default_storage.save(name, File(stream))
    written.append(saved)


def _embed(owner: User) -> dict[str, int] | None:
    """Vectors for everything imported, now, so it is found by meaning at once (the one reindex of every
    vector kind). With the embedder down the worker is asked to do it, and the beat sweep catches up."""
    from maintenance.vectors import vectors_reindex

    try:
        return vectors_reindex(embedder=get_embedder(), batch_size=64, owner_id=owner.pk).embedded
    except EmbedderUnavailable:
        logger.warning("archive.import.vectors_queued", extra={"ownerId": owner.pk})
        vectors_follow(owner.pk)
        return None

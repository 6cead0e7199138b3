"""Reads. Every selector takes the Access and returns only what it may reach."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils.dateparse import parse_datetime

from memory.access import Access
from memory.errors import NotFound, ValidationFailed
from memory.models import AccessToken, Blob, Partition, Scope, Source
from memory.paging import decode_cursor, encode_cursor


def partitions_for_access(access: Access, *, active_only: bool = False) -> QuerySet[Partition]:
    access.require_scope(Scope.READ)
    partitions = Partition.objects.filter(owner=access.user).order_by("key")
    if access.reachable_keys is not None:
        partitions = partitions.filter(key__in=access.reachable_keys)
    if active_only:
        partitions = partitions.filter(is_active=True)
    return partitions


def tokens_for_user(access: Access) -> QuerySet[AccessToken]:
    """The tokens a person owns (web UI): newest first, revoked ones included for the record."""
    return AccessToken.objects.filter(owner=access.user).prefetch_related("acts_for")


def source_for_access(access: Access, source_id: str) -> Source:
    """A source in the partitions this request reads (tombstoned versions included, erased ones not)."""
    access.require_scope(Scope.READ)
    source = (
        Source.objects.select_related("partition", "blob", "parent")
        .filter(pk=source_id, owner=access.user, partition__in=access.read_partitions, identity_retired_at__isnull=True)
        .first()
    )
    if source is None:
        raise NotFound("No such source.", details={"sourceId": source_id})
    return source


@dataclass(frozen=True)
class SourcePage:
    sources: list[Source]
    next_cursor: str | None


def sources_for_access(
    access: Access,
    *,
    kind: str | None = None,
    scope: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    include_tombstoned: bool = False,
    include_children: bool = False,
    cursor: str | None = None,
    limit: int = 50,
) -> SourcePage:
    """Newest first by occurred_at, then id; `cursor` continues where the last page ended."""
    access.require_scope(Scope.READ)
    sources = Source.objects.select_related("partition").filter(
        owner=access.user, partition__in=access.read_partitions, identity_retired_at__isnull=True
    )
    if not include_tombstoned:
        sources = sources.filter(tombstoned_at__isnull=True)
    if not include_children and kind is None:
        sources = sources.filter(parent__isnull=True)
    if kind:
        sources = sources.filter(kind=kind)
    if scope:
        sources = sources.filter(scope=scope)
    if since:
        sources = sources.filter(occurred_at__gte=since)
    if until:
        sources = sources.filter(occurred_at__lt=until)
    if cursor:
        occurred, last_id = decode_cursor(cursor, 2)
        try:
            moment = parse_datetime(occurred) if isinstance(occurred, str) else None
        except ValueError:
            moment = None
        if moment is None or not isinstance(last_id, str):
            raise ValidationFailed("The cursor is not valid.", details={"cursor": ["Invalid cursor."]})
        sources = sources.filter(Q(occurred_at__lt=moment) | Q(occurred_at=moment, id__lt=last_id))
    page = list(sources.order_by("-occurred_at", "-id")[: limit + 1])
    next_cursor = (
        encode_cursor(page[limit - 1].occurred_at.isoformat(), page[limit - 1].pk) if len(page) > limit else None
    )
    return SourcePage(sources=page[:limit], next_cursor=next_cursor)


def blob_for_access(access: Access, sha256: str) -> Blob:
    """An artifact of this user's, or the original of a file source in the partitions this request reads.
    Other users' hashes, and originals outside the request's partitions, are not found."""
    access.require_scope(Scope.READ)
    blob = (
        Blob.objects.filter(owner=access.user, sha256=sha256.lower())
        .filter(Q(is_artifact=True) | Q(sources__partition__in=access.read_partitions))
        .distinct()
        .first()
    )
    if blob is None:
        raise NotFound("No such artifact.", details={"sha256": sha256})
    return blob


def artifacts_for_access(
    access: Access, *, cursor: str | None = None, limit: int = 50
) -> tuple[list[Blob], str | None]:
    access.require_scope(Scope.READ)
    blobs = Blob.objects.filter(owner=access.user, is_artifact=True)
    if cursor:
        (last_id,) = decode_cursor(cursor, 1)
        if not isinstance(last_id, str):
            raise ValidationFailed("The cursor is not valid.", details={"cursor": ["Invalid cursor."]})
        blobs = blobs.filter(id__lt=last_id)
    page = list(blobs.order_by("-id")[: limit + 1])
    return page[:limit], (encode_cursor(page[limit - 1].pk) if len(page) > limit else None)

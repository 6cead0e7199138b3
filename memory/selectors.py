"""Reads. Every selector takes the Access and returns only what it may reach."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import DateTimeField, ExpressionWrapper, F, OuterRef, Prefetch, Q, QuerySet, Subquery

from memory.access import Access
from memory.errors import NotFound, ValidationFailed
from memory.models import (
    AccessToken,
    Blob,
    Claim,
    ClaimStatus,
    Evidence,
    Node,
    Operation,
    Partition,
    Scope,
    Source,
    vector_fields,
)
from memory.models.search import words_of
from memory.names import normalize_name
from memory.paging import decode_cursor, decode_time_cursor, keyset_page
from memory.recall.corpora import KEYED_MEMORIES
from memory.recall.legs import vector_hits
from memory.recall.search import query_vector

SHA256 = re.compile(r"[0-9a-fA-F]{64}")


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


def token_of_person(access: Access, token_id: str) -> AccessToken:
    """One of the person's own tokens; another person's (or none) is NOT_FOUND, so existence never leaks."""
    token = AccessToken.objects.filter(owner=access.user, pk=token_id).first()
    if token is None:
        raise NotFound("No such token.", details={"tokenId": token_id})
    return token


def in_reach(
    access: Access, objects: QuerySet[Any], object_id: str, *, noun: str, id_field: str, for_update: bool = False
) -> Any:
    """The one permission-checked lookup: the object with this id among the owner's rows in the partitions
    this request reads. Anything else, existing or not, is NOT_FOUND (existence never leaks)."""
    access.require_scope(Scope.READ)
    if for_update:
        objects = objects.select_for_update(of=("self",))
    found = objects.filter(pk=object_id, owner=access.user, partition__in=access.read_partitions).first()
    if found is None:
        raise NotFound(f"No such {noun}.", details={id_field: object_id})
    return found


def source_for_access(access: Access, source_id: str) -> Source:
    """A source in the partitions this request reads (tombstoned versions included, erased ones not)."""
    sources = Source.objects.select_related("partition", "blob", "parent").filter(identity_retired_at__isnull=True)
    source: Source = in_reach(access, sources, source_id, noun="source", id_field="sourceId")
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
    status: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> SourcePage:
    """Newest first by occurred_at, then id; `cursor` continues where the last page ended. Each source carries
    `processing_status`, the status of its newest receipt (None for a message stored with its conversation);
    `status` keeps only the sources whose newest receipt has that status."""
    access.require_scope(Scope.READ)
    newest = Operation.objects.filter(source=OuterRef("pk")).order_by("-queued_at", "-id").values("status")[:1]
    sources = (
        Source.objects.select_related("partition")
        .filter(owner=access.user, partition__in=access.read_partitions, identity_retired_at__isnull=True)
        .annotate(processing_status=Subquery(newest))
    )
    if status:
        sources = sources.filter(processing_status=status)
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
        moment, last_id = decode_time_cursor(cursor)
        sources = sources.filter(Q(occurred_at__lt=moment) | Q(occurred_at=moment, id__lt=last_id))
    page, next_cursor = keyset_page(
        sources.order_by("-occurred_at", "-id"), limit, lambda last: (last.occurred_at.isoformat(), last.pk)
    )
    return SourcePage(sources=page, next_cursor=next_cursor)


def blob_for_access(access: Access, sha256: str) -> Blob:
    """An artifact put through, or the original of a file source in, the partitions this request reads.
    Other users' hashes, and bytes kept only for partitions the request does not read, are not found."""
    access.require_scope(Scope.READ)
    if not SHA256.fullmatch(sha256):  # checked first: a NUL or other junk must never reach the query
        raise ValidationFailed("That is not a SHA-256 digest.", details={"sha256": ["Give 64 hexadecimal digits."]})
    blob = (
        Blob.objects.filter(owner=access.user, sha256=sha256.lower())
        .filter(Q(placements__partition__in=access.read_partitions) | Q(sources__partition__in=access.read_partitions))
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
    blobs = Blob.objects.filter(owner=access.user, placements__partition__in=access.read_partitions).distinct()
    if cursor:
        moment, last_id = decode_time_cursor(cursor)
        blobs = blobs.filter(Q(created_at__lt=moment) | Q(created_at=moment, id__lt=last_id))
    # Newest first by time, not by id: a ULID orders only to the millisecond (its tail is random).
    newest_first = blobs.order_by("-created_at", "-id")
    return keyset_page(newest_first, limit, lambda last: (last.created_at.isoformat(), last.pk))


def claim_for_access(access: Access, claim_id: str, *, for_update: bool = False) -> Claim:
    """A claim in the partitions this request reads; anything else is not found."""
    claims = Claim.objects.select_related("partition", "subject", "object_node")
    claim: Claim = in_reach(access, claims, claim_id, noun="claim", id_field="claimId", for_update=for_update)
    return claim


def current_revision(claim: Claim) -> Claim:
    """The claim as it reads now: followed through its corrections (a correction is the revision that
    superseded it and derives from it). Anything else that superseded it is not the same claim, so it stops."""
    seen = {claim.pk}
    while claim.status == ClaimStatus.SUPERSEDED and claim.superseded_by_id and claim.superseded_by_id not in seen:
        successor = Claim.objects.get(pk=claim.superseded_by_id)
        if successor.derived_from_id != claim.pk:
            break
        seen.add(successor.pk)
        claim = successor
    return claim


def claim_revisions(claim: Claim) -> list[Claim]:
    """Every revision of a claim's history, oldest first (corrections link by derived_from/superseded_by)."""
    first = claim
    seen = {claim.pk}
    while first.derived_from_id and first.derived_from_id not in seen:
        first = Claim.objects.get(pk=first.derived_from_id)
        seen.add(first.pk)
    chain = [first]
    while chain[-1].superseded_by_id and chain[-1].superseded_by_id not in {c.pk for c in chain}:
        chain.append(Claim.objects.get(pk=chain[-1].superseded_by_id))
    return chain


@dataclass(frozen=True)
class ClaimPage:
    claims: list[Claim]
    next_cursor: str | None


def claims_for_access(
    access: Access,
    *,
    statuses: list[str] | None = None,
    kinds: list[str] | None = None,
    origins: list[str] | None = None,
    pinned: bool | None = None,
    needs_reverification: bool | None = None,
    subject_id: str | None = None,
    object_node_id: str | None = None,
    text: str | None = None,
    partition_keys: list[str] | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> ClaimPage:
    """Claims newest first (recorded_at, then id), active ones unless `statuses` says otherwise."""
    access.require_scope(Scope.READ)
    claims = (
        Claim.objects.select_related("partition", "subject", "object_node")
        .defer(*vector_fields("subject", "object_node"))
        .prefetch_related(Prefetch("evidence"))
        .filter(owner=access.user, partition__in=access.read_partitions, status__in=statuses or [ClaimStatus.ACTIVE])
    )
    if kinds:
        claims = claims.filter(kind__in=kinds)
    if origins:
        claims = claims.filter(origin__in=origins)
    if pinned is not None:
        claims = claims.filter(pinned=pinned)
    if needs_reverification is not None:
        claims = claims.filter(needs_reverification=needs_reverification)
    if subject_id:
        claims = claims.filter(subject_id=subject_id)
    if object_node_id:
        claims = claims.filter(object_node_id=object_node_id)
    if partition_keys:  # narrows the partitions read (the workspace view); never widens them
        claims = claims.filter(partition__key__in=partition_keys)
    if text:
        claims = claims.filter(search_vector=words_of(text))
    if cursor:
        moment, last_id = decode_time_cursor(cursor)
        claims = claims.filter(Q(recorded_at__lt=moment) | Q(recorded_at=moment, id__lt=last_id))
    # Newest first by walking claim_owner_recent, except for a text filter: its matches come from the text's index
    # and are sorted (the walk would read every newer row that does not match: where a word's matches lie in time
    # is unknown to the planner, and a common word's older matches cost 30-120 ms at 100,000 claims).
    recorded = (
        ExpressionWrapper(F("recorded_at") + timedelta(0), output_field=DateTimeField()) if text else F("recorded_at")
    )
    page, next_cursor = keyset_page(
        claims.order_by(recorded.desc(), "-id"), limit, lambda last: (last.recorded_at.isoformat(), last.pk)
    )
    return ClaimPage(claims=page, next_cursor=next_cursor)


def node_for_access(access: Access, node_id: str, *, for_update: bool = False) -> Node:
    """A node in the partitions this request reads; anything else is not found."""
    nodes = Node.objects.select_related("partition")
    node: Node = in_reach(access, nodes, node_id, noun="node", id_field="nodeId", for_update=for_update)
    return node


def nodes_for_access(
    access: Access,
    *,
    types: list[str] | None = None,
    label: str | None = None,
    include_merged: bool = False,
    cursor: str | None = None,
    limit: int = 50,
) -> tuple[list[Node], str | None]:
    """Nodes in stable id order; `label` matches labels and aliases (case- and accent-insensitive)."""
    access.require_scope(Scope.READ)
    nodes = Node.objects.select_related("partition").filter(owner=access.user, partition__in=access.read_partitions)
    if not include_merged:
        nodes = nodes.filter(merged_into__isnull=True)
    if types:
        nodes = nodes.filter(type__in=types)
    if label:
        nodes = nodes.filter(
            Q(label__icontains=label) | Q(aliases__normalized__contains=normalize_name(label))
        ).distinct()
    if cursor:
        (last_id,) = decode_cursor(cursor, 1)
        if not isinstance(last_id, str):
            raise ValidationFailed("The cursor is not valid.", details={"cursor": ["Invalid cursor."]})
        nodes = nodes.filter(id__gt=last_id)
    return keyset_page(nodes.order_by("id"), limit, lambda last: (last.pk,))


def node_neighborhood(access: Access, node: Node, *, limit: int = 100) -> tuple[list[Node], list[Claim]]:
    """The current claims linking this node to others, and those other nodes (one hop)."""
    claims = list(
        Claim.objects.select_related("subject", "object_node", "partition")
        .filter(owner=access.user, partition__in=access.read_partitions, status=ClaimStatus.ACTIVE)
        .filter(Q(subject=node, object_node__isnull=False) | Q(object_node=node, subject__isnull=False))
        .order_by("id")[:limit]
    )
    neighbours: dict[str, Node] = {}
    for claim in claims:
        other = claim.object_node if claim.subject_id == node.pk else claim.subject
        if other is not None and other.pk != node.pk:
            neighbours.setdefault(other.pk, other)
    return sorted(neighbours.values(), key=lambda n: n.pk), claims


def node_sources(access: Access, node: Node, *, limit: int = 50) -> list[tuple[Source, int]]:
    """Sources that back claims about this node, with how many pieces of evidence each gives, newest first."""
    evidence = Evidence.objects.filter(
        Q(claim__subject=node) | Q(claim__object_node=node),
        owner=access.user,
        source__partition__in=access.read_partitions,
    )
    counts: dict[str, int] = {}
    for source_id in evidence.values_list("source_id", flat=True):
        counts[source_id] = counts.get(source_id, 0) + 1
    sources = Source.objects.select_related("partition").filter(pk__in=counts).order_by("-occurred_at")[:limit]
    return [(source, counts[source.pk]) for source in sources]


def memories_in_reach(access: Access, include_quarantined: bool = False) -> QuerySet[Claim]:
    """Current keyed memories (quarantined ones only when asked for) in the partitions this request reads."""
    access.require_scope(Scope.READ)
    statuses = [ClaimStatus.ACTIVE, *([ClaimStatus.QUARANTINED] if include_quarantined else [])]
    return (
        Claim.objects.select_related("partition")
        .filter(owner=access.user, partition__in=access.read_partitions, status__in=statuses)
        .exclude(key="")
    )


def memory_for_access(access: Access, key: str, *, include_quarantined: bool = False) -> Claim:
    memory = memories_in_reach(access, include_quarantined).filter(key=key).order_by("-recorded_at").first()
    if memory is None:
        raise NotFound("No memory with this key.", details={"key": key})
    return memory


def memories_for_access(
    access: Access, *, kind: str | None = None, prefix: str = "", include_quarantined: bool = False, limit: int = 50
) -> list[Claim]:
    memories = memories_in_reach(access, include_quarantined)
    if kind:
        memories = memories.filter(kind=kind)
    if prefix:
        memories = memories.filter(key__startswith=prefix)
    return list(memories.order_by("key", "-recorded_at")[:limit])


def memory_history(access: Access, key: str) -> list[Claim]:
    """Every revision saved under a key, oldest first (quarantined and superseded ones included)."""
    access.require_scope(Scope.READ)
    revisions = list(
        Claim.objects.select_related("partition")
        .filter(owner=access.user, partition__in=access.read_partitions, key=key)
        .order_by("recorded_at", "id")
    )
    if not revisions:
        raise NotFound("No memory with this key.", details={"key": key})
    return revisions


def memories_matching(access: Access, query: str, *, include_quarantined: bool = False, limit: int = 10) -> list[Claim]:
    """Keyed memories by meaning first: the nearest vectors of the active embedder above the similarity floor
    (recall's own vector leg); then keyword matches (full text, then substring) fill up to `limit`. Rows
    without a vector of the active model still match by keyword; with no embedder the search is keyword only."""
    memories = memories_in_reach(access, include_quarantined)
    ranked = _memories_by_meaning(access, memories, query, include_quarantined, limit)
    if len(ranked) < limit:
        words = words_of(query)
        ranked += list(
            memories.filter(search_vector=words)
            .exclude(pk__in=[m.pk for m in ranked])
            .order_by("-recorded_at")[: limit - len(ranked)]
        )
    if len(ranked) < limit:
        ranked += list(
            memories.filter(statement__icontains=query).exclude(pk__in=[m.pk for m in ranked])[: limit - len(ranked)]
        )
    return ranked


def _memories_by_meaning(
    access: Access, memories: QuerySet[Claim], query: str, include_quarantined: bool, limit: int
) -> list[Claim]:
    vector, model_id = query_vector(query)
    if vector is None:
        return []
    params = {
        "owner": access.user.pk,
        "partitions": [partition.pk for partition in access.read_partitions],
        "statuses": [ClaimStatus.ACTIVE, *([ClaimStatus.QUARANTINED] if include_quarantined else [])],
    }
    hits = vector_hits((KEYED_MEMORIES,), vector, model_id, params, None, limit)
    found = memories.in_bulk([hit.id for hit in hits])
    return [found[hit.id] for hit in hits if hit.id in found]

"""Erasure: a source and everything derived from it leave every table (SPEC §11)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from memory.access import Access
from memory.errors import Conflict, NotFound
from memory.models import ArtifactPlacement, Blob, Chunk, Claim, Operation, Scope, Source, SourceKind
from memory.pipeline.chunking import CONTEXT_TURNS, message_context, turns_before
from memory.services.audit import audit_erase_target, audit_record
from memory.services.blobs import blob_delete_if_unreferenced
from memory.services.claim_erasure import claims_erase_derived
from memory.services.embeddings import chunk_vectors_follow


@dataclass(frozen=True)
class Erasure:
    source_id: str
    sources: int
    blobs: int
    retired: bool


def _family(source: Source) -> list[Source]:
    """Every version of the source's identity (replaced versions keep their text) and all their descendants."""
    versions = list(
        Source.objects.filter(
            owner_id=source.owner_id, partition_id=source.partition_id, kind=source.kind, external_id=source.external_id
        ).exclude(pk=source.pk)
    )
    family, frontier = [source, *versions], [source, *versions]
    while frontier:
        frontier = list(Source.objects.filter(parent__in=frontier))
        family.extend(frontier)
    return family


def _lock_ancestors(source_id: str, access: Access) -> None:
    """Holds the rows of the source's ancestors, the root first. A job writes the chunks of its source's messages
    holding its source's row (memory.pipeline.steps): once the conversation's row is held, no job is between reading
    one of its messages and writing that message's chunks, so the chunks deleted here are all there will be (a
    search reads chunks without their sources). Every erasure within one conversation takes its row first, so two
    never deadlock."""
    chain: list[str] = []
    parent = Source.objects.filter(pk=source_id, owner=access.user).values_list("parent_id", flat=True).first()
    while parent:
        chain.append(parent)
        parent = Source.objects.filter(pk=parent).values_list("parent_id", flat=True).first()
    for pk in reversed(chain):
        list(Source.objects.select_for_update(of=("self",)).filter(pk=pk).values_list("pk", flat=True))


def _turns_after_without(message: Source) -> None:
    """The turns after an erased message carry the end of it in their chunks' context (they are found by it) and
    lean towards it in their vectors: the next CONTEXT_TURNS live turns get their context again from the live turns
    before them and lose their vector, which a worker makes again once the erasure commits (memory.embed_chunks;
    the vector sweep if the queue is down; meanwhile they are found by keyword)."""
    following = Source.objects.live().filter(parent_id=message.parent_id, ordinal__gt=message.ordinal)
    turns = list(following.order_by("ordinal").only("pk", "ordinal", "speaker")[:CONTEXT_TURNS])
    for turn in turns:
        context = message_context(turn.speaker, turns_before(message.parent_id, turn.ordinal))
        Chunk.objects.filter(source=turn).update(context=context, embedding=None, embedding_model="")
    chunk_vectors_follow(list(Chunk.objects.filter(source__in=turns).values_list("pk", flat=True)))


@transaction.atomic
def source_erase(*, access: Access, source_id: str, retire_identity: bool = False) -> Erasure:
    """Erase a source, its children (messages, attachments), their chunks, blobs no other source uses, and
    the content of their audit rows. Receipts keep their status but lose the request fingerprint.

    With `retire_identity`, a contentless row keeps the identity so the same id is refused from now on
    (a sync cannot bring erased material back).
    """
    access.require_scope(Scope.EDIT)
    _lock_ancestors(source_id, access)
    source = (
        Source.objects.select_for_update(of=("self",))
        .select_related("partition")
        .filter(pk=source_id, owner=access.user)
        .first()
    )
    if source is None or not access.can_reach(source.partition) or source.identity_retired_at is not None:
        raise NotFound("No such source.", details={"sourceId": source_id})
    family = _family(source)
    blob_ids = {member.blob_id for member in family if member.blob_id}
    for member in family:
        audit_erase_target(owner=access.user, target_type="source", target_id=member.pk)
    claims_erase_derived(owner=access.user, source_ids=[member.pk for member in family])
    Operation.objects.filter(source__in=family).update(request_hash="", error_message="")
    if retire_identity:
        now = timezone.now()
        Source.objects.filter(pk__in=[member.pk for member in family if member.pk != source.pk]).delete()
        source.chunks.all().delete()
        Source.objects.filter(pk=source.pk).update(
            title="", content="", markdown="", content_hash="", source_context={}, participants=[], segments=[],
            speaker="", blob=None, filename="", tombstoned_at=now, identity_retired_at=now,
        )  # fmt: skip
    else:
        Source.objects.filter(pk__in=[member.pk for member in family]).delete()
    if source.kind == SourceKind.MESSAGE and source.parent_id:
        _turns_after_without(source)
    erased_blobs = sum(blob_delete_if_unreferenced(blob_id) for blob_id in blob_ids)
    audit_record(
        actor=access.actor,
        owner=access.user,
        action="source.erase",
        target=source,
        partition=source.partition,
        after={"sources": len(family), "blobs": erased_blobs, "retired": retire_identity},
    )
    return Erasure(source_id=source_id, sources=len(family), blobs=erased_blobs, retired=retire_identity)


@dataclass(frozen=True)
class SessionErasure:
    session_id: str
    events: int
    sources: int
    claims: int


@transaction.atomic
def session_erase(*, access: Access, session_id: str) -> SessionErasure:
    """Erase an agent session (needs `edit`): its events, and what `coord_curate` made of it (the session's
    derived source, its chunks, and the claims and handoffs only it backs), with the audit rows' content.
    A handoff saved with /handoff/save is a keyed memory of its own, tied to no session: /memory/delete
    with eraseHistory erases it."""
    from memory.services.sessions import session_for_access

    access.require_scope(Scope.EDIT)
    session = session_for_access(access, session_id, for_update=True)
    derived = Source.objects.filter(
        owner=access.user, partition=session.partition, kind=SourceKind.SESSION, external_id=session.pk,
        identity_retired_at__isnull=True, parent__isnull=True,
    )  # fmt: skip
    sources = claims = 0
    for source in derived:
        before = Claim.objects.filter(owner=access.user).count()
        sources += source_erase(access=access, source_id=source.pk).sources
        claims += before - Claim.objects.filter(owner=access.user).count()
    events = session.events.count()
    audit_erase_target(owner=access.user, target_type="agentsession", target_id=session.pk)
    session.delete()
    audit_record(
        actor=access.actor, owner=access.user, action="session.erase", target_type="agentsession",
        target_id=session_id, partition=session.partition,
        after={"events": events, "sources": sources, "claims": claims},
    )  # fmt: skip
    return SessionErasure(session_id=session_id, events=events, sources=sources, claims=claims)


@dataclass(frozen=True)
class ArtifactErasure:
    sha256: str
    partitions: int


@transaction.atomic
def artifact_erase(*, access: Access, sha256: str) -> ArtifactErasure:
    """Erase an artifact from the partitions this request reaches (needs `edit`); the bytes go from disk once
    no partition lists it and no file source keeps it as its original.

    Refused (CONFLICT, nothing changes) while a file source in reach keeps the same bytes as its original:
    erasing the artifact would leave them on disk under the file, so that source is erased first
    (/source/delete). Bytes kept by a partition out of this token's reach stay, and the answer does not
    say so (as /artifact/list and PUT /artifact never reveal them)."""
    access.require_scope(Scope.EDIT)
    placements = ArtifactPlacement.objects.select_for_update().filter(
        owner=access.user, blob__sha256=sha256.lower(), partition__in=access.read_partitions
    )
    found = list(placements.select_related("blob"))
    if not found:
        raise NotFound("No such artifact.", details={"sha256": sha256})
    blob = found[0].blob
    users = list(
        Source.objects.filter(blob=blob, partition__in=access.read_partitions).values_list("pk", flat=True)[:20]
    )
    if users:
        raise Conflict(
            "A file source keeps these bytes as its original; erase it first with /source/delete.",
            details={"sha256": sha256, "sourceIds": users},
        )
    ArtifactPlacement.objects.filter(pk__in=[placement.pk for placement in found]).delete()
    if not blob.placements.exists():
        Blob.objects.filter(pk=blob.pk).update(is_artifact=False)
        blob_delete_if_unreferenced(blob.pk)
        audit_erase_target(owner=access.user, target_type="blob", target_id=blob.pk)
    audit_record(
        actor=access.actor, owner=access.user, action="artifact.erase", target_type="blob", target_id=blob.pk,
        partition=access.partition, after={"partitions": len(found)},
    )  # fmt: skip
    return ArtifactErasure(sha256=blob.sha256, partitions=len(found))

"""Erasure: a source and everything derived from it leave every table (SPEC §11)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from memory.access import Access
from memory.errors import NotFound
from memory.models import Operation, Scope, Source
from memory.services.audit import audit_erase_target, audit_record
from memory.services.blobs import blob_delete_if_unreferenced
from memory.services.claim_erasure import claims_erase_derived


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


@transaction.atomic
def source_erase(*, access: Access, source_id: str, retire_identity: bool = False) -> Erasure:
    """Erase a source, its children (messages, attachments), their chunks, blobs no other source uses, and
    the content of their audit rows. Receipts keep their status but lose the request fingerprint.

    With `retire_identity`, a contentless row keeps the identity so the same id is refused from now on
    (a sync cannot bring erased material back).
    """
    access.require_scope(Scope.EDIT)
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

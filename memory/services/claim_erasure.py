"""Erasing claims without erasing what other sources or revisions still back (SPEC §11, issue 12).

Supersession links a claim to a newer one that may come from another source; corrections and status changes
link revisions by `derived_from`. Erasure removes exactly the claims asked for and mends the chains around
them, so no survivor points at a gap, an older value becomes current again when the newer one is erased, and
a task never outlives all its statuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.utils import timezone

from memory.models import Claim, Evidence, Node, NodeType
from memory.services.audit import audit_erase_target, memory_changed


def _derived_only_from(owner: Any, source_ids: list[str]) -> set[str]:
    """Claims whose every piece of evidence comes from these sources, and the revisions without evidence of
    their own made from such a claim (a correction of erased content is erased content)."""
    elsewhere = Evidence.objects.filter(owner=owner).exclude(source_id__in=source_ids).values("claim_id")
    doomed = set(
        Claim.objects.filter(owner=owner, evidence__source_id__in=source_ids)
        .exclude(pk__in=elsewhere)
        .values_list("pk", flat=True)
    )
    frontier = set(doomed)
    while frontier:
        frontier = set(
            Claim.objects.filter(owner=owner, derived_from_id__in=frontier, evidence__isnull=True)
            .exclude(pk__in=doomed)
            .values_list("pk", flat=True)
        )
        doomed |= frontier
    return doomed


@dataclass
class _Mend:
    """How one surviving claim is re-linked once the erased claims next to it in a chain are gone."""

    claim_id: str
    changes: dict[str, Any]


def _mends(doomed: set[str]) -> list[_Mend]:
    """The revision before an erased one points to the first survivor after it; with no survivor after it,
    it takes the erased end's place (the newer value is gone, so the older one is current again). The
    survivor after it derives from the nearest survivor before it."""
    gone = {claim.pk: claim for claim in Claim.objects.filter(pk__in=doomed)}

    def walk(claim_id: str, link: str) -> tuple[str | None, Claim]:
        last, seen = gone[claim_id], {claim_id}
        while getattr(last, link) in gone and getattr(last, link) not in seen:
            seen.add(getattr(last, link))
            last = gone[getattr(last, link)]
        return getattr(last, link), last

    mends = []
    for earlier in Claim.objects.filter(superseded_by_id__in=doomed).exclude(pk__in=doomed):
        after, end = walk(str(earlier.superseded_by_id), "superseded_by_id")
        if after is not None:
            mends.append(_Mend(earlier.pk, {"superseded_by_id": after}))
        else:
            changes = {"superseded_by_id": None, "status": end.status, "valid_until": end.valid_until}
            mends.append(_Mend(earlier.pk, changes))
    for later in Claim.objects.filter(derived_from_id__in=doomed).exclude(pk__in=doomed):
        before, _ = walk(str(later.derived_from_id), "derived_from_id")
        mends.append(_Mend(later.pk, {"derived_from_id": before}))
    return mends


def _erase_statusless_tasks(owner: Any, task_ids: set[str]) -> None:
    """A task whose every status was erased was known only from the erased sources: it goes too, with
    whatever else was said about it, rather than linger as a statusless task no view shows."""
    statusless = Node.objects.filter(owner=owner, pk__in=task_ids, type=NodeType.TASK).exclude(
        claims__predicate="HAS_TASK_STATUS"
    )
    for task in statusless:
        about = Claim.objects.filter(Q(subject=task) | Q(object_node=task)).values_list("pk", flat=True)
        for claim_id in about:
            audit_erase_target(owner=owner, target_type="claim", target_id=claim_id)
        audit_erase_target(owner=owner, target_type="node", target_id=task.pk)
        task.delete()


def claim_lineage(claim_ids: set[str]) -> set[str]:
    """The claims and all their revisions: everything linked to them by `derived_from`, either way (corrections,
    a task's successive statuses, a keyed memory's values). Not a claim that only superseded one of them."""
    lineage, frontier = set(claim_ids), set(claim_ids)
    while frontier:
        later = Claim.objects.filter(derived_from_id__in=frontier).values_list("pk", flat=True)
        earlier = Claim.objects.filter(pk__in=frontier, derived_from__isnull=False).values_list(
            "derived_from_id", flat=True
        )
        frontier = {*later, *earlier} - lineage
        lineage |= frontier
    return lineage


def claims_erase_derived(*, owner: Any, source_ids: list[str]) -> int:
    """Erasure of sources erases what was derived from them, and only that. A claim goes when all its evidence
    comes from them (and so do corrections of it); a claim also backed by other sources keeps those and loses
    only the erased evidence. Returns how many claims went."""
    return claims_erase(owner=owner, claim_ids=_derived_only_from(owner, source_ids))


def claims_erase(*, owner: Any, claim_ids: set[str]) -> int:
    """Erase these claims (evidence and audit content with them). Revision chains that run through claims that
    stay are mended around the gap, so an older value becomes current again when the newer one is erased, and
    a task left with no status at all goes too. Returns how many claims went."""
    from commitments.services import task_lock

    doomed = set(Claim.objects.filter(owner=owner, pk__in=claim_ids).values_list("pk", flat=True))
    if not doomed:
        return 0
    tasks = set(Claim.objects.filter(pk__in=doomed, predicate="HAS_TASK_STATUS").values_list("subject_id", flat=True))
    for task in Node.objects.filter(pk__in=tasks).order_by("pk"):  # in one order, so two erasures cannot deadlock
        task_lock(task)  # a status change waits, then sees the chain as mended
    mends = _mends(doomed)
    for claim_id in doomed:
        audit_erase_target(owner=owner, target_type="claim", target_id=claim_id)
    Claim.objects.filter(pk__in=doomed).delete()
    # After the delete: an erased active task status must leave its slot before an older one takes it.
    for mend in mends:
        Claim.objects.filter(pk=mend.claim_id).update(**mend.changes, updated_at=timezone.now())
    _erase_statusless_tasks(owner, tasks - {None})
    memory_changed(owner.pk)  # whoever calls: what a search keeps of the owner's memory is read again
    return len(doomed)

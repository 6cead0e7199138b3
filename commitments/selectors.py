"""What is really still open: tasks whose newest active `HAS_TASK_STATUS` is pending or in progress
(seeds/000). Old search hits never decide this; only the current status claims do. Four queries, however
many tasks there are."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Prefetch

from memory.access import Access
from memory.models import Claim, ClaimOrigin, ClaimStatus, Evidence, Node, NodeType, Scope
from memory.moments import days_after

OPEN_STATUSES = ("pending", "in_progress")
# Trusted: the owner's own words or a person's decision. Candidate: an inference, an import or a default.
PROVENANCE = {
    "trusted": (ClaimOrigin.USER_STATED, ClaimOrigin.MANUAL),
    "candidate": (ClaimOrigin.ASSISTANT_INFERRED, ClaimOrigin.IMPORTED, ClaimOrigin.SYSTEM_DEFAULT),
}
PROVENANCE["all"] = PROVENANCE["trusted"] + PROVENANCE["candidate"]


@dataclass(frozen=True)
class OpenTask:
    task: Node
    status: Claim
    owner: Node | None  # None: nobody assigned; the user's own Self node is returned as is
    due: Claim | None

    @property
    def trusted(self) -> bool:
        return self.status.origin in PROVENANCE["trusted"]

    @property
    def source_id(self) -> str | None:
        """Where the current status was said (its first evidence), if anywhere."""
        evidence = list(self.status.evidence.all())
        return evidence[0].source_id if evidence else None

    @property
    def due_on(self) -> date | None:
        try:
            return date.fromisoformat(str(self.due.object_value)) if self.due else None
        except ValueError:
            return None


def open_commitments(
    access: Access,
    *,
    owned_by: str | None = None,
    due_before: date | None = None,
    provenance: str = "trusted",
    statuses: tuple[str, ...] = OPEN_STATUSES,
) -> list[OpenTask]:
    """Tasks by their current status (open ones by default) in the partitions this request reads, soonest
    due first, undated last. `provenance` picks the band (trusted by default: confirmed work); `owned_by`
    keeps a Person's tasks; `due_before` (inclusive) keeps dated tasks due by then."""
    access.require_scope(Scope.READ)
    current_statuses = (
        Claim.objects.filter(
            owner=access.user, partition__in=access.read_partitions, predicate="HAS_TASK_STATUS",
            status=ClaimStatus.ACTIVE, subject__type=NodeType.TASK, subject__merged_into__isnull=True,
            object_value__in=list(statuses), origin__in=PROVENANCE[provenance],
        )
        .select_related("subject", "partition")
        .prefetch_related(Prefetch("evidence", queryset=Evidence.objects.order_by("id")))
        .defer("embedding", "search_vector", "subject__embedding", "subject__search_vector")
        .order_by("subject_id", "-valid_from", "-id")
        .distinct("subject_id")
    )  # fmt: skip
    current = {claim.subject_id: claim for claim in current_statuses}
    details = Claim.objects.filter(
        subject_id__in=list(current), predicate__in=["OWNED_BY", "DUE_ON"], status=ClaimStatus.ACTIVE
    ).select_related("object_node")
    owners: dict[str, Node] = {}
    dues: dict[str, Claim] = {}
    for claim in details.defer("embedding", "search_vector"):
        if claim.predicate == "OWNED_BY" and claim.object_node is not None:
            owners[str(claim.subject_id)] = claim.object_node
        elif claim.predicate == "DUE_ON":
            dues[str(claim.subject_id)] = claim
    tasks = [
        OpenTask(task=claim.subject, status=claim, owner=owners.get(task_id), due=dues.get(task_id))
        for task_id, claim in current.items()
        if claim.subject is not None
    ]
    if owned_by:
        tasks = [item for item in tasks if item.owner is not None and item.owner.pk == owned_by]
    if due_before:
        tasks = [item for item in tasks if item.due_on is not None and item.due_on <= due_before]
    return sorted(tasks, key=lambda item: (item.due_on is None, item.due_on or date.max, item.task.pk))


def due_buckets(tasks: list[OpenTask], today: date, within_days: int) -> dict[str, list[OpenTask]]:
    """Open dated tasks by due date relative to `today` (the digest); undated ones and those due after the
    horizon are left out."""
    horizon = days_after(today, within_days)
    buckets: dict[str, list[OpenTask]] = {"overdue": [], "dueToday": [], "upcoming": []}
    for item in tasks:
        due = item.due_on
        if due is None or due > horizon:
            continue
        buckets["overdue" if due < today else "dueToday" if due == today else "upcoming"].append(item)
    return buckets

"""What is really still open: tasks whose newest active `HAS_TASK_STATUS` is pending or in progress
(seeds/000). Old search hits never decide this; only the current status claims do. Four queries, however
many tasks there are."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import F, Prefetch

from memory.access import Access
from memory.models import Claim, ClaimOrigin, ClaimStatus, Evidence, Node, NodeType, Scope, vector_fields
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
        .defer(*vector_fields("subject"))
        .order_by("subject_id", "-valid_from", "-id")
        .distinct("subject_id")
    )  # fmt: skip
    current = {claim.subject_id: claim for claim in current_statuses}
    details = Claim.objects.filter(
        subject_id__in=list(current), predicate__in=["OWNED_BY", "DUE_ON"], status=ClaimStatus.ACTIVE
    ).select_related("object_node")
    owners: dict[str, Node] = {}
    dues: dict[str, Claim] = {}
    for claim in details.defer(*vector_fields()):
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


def due_buckets(
    tasks: list[OpenTask], today: date, within_days: int | None, *, undated: bool = False
) -> dict[str, list[OpenTask]]:
    """Open dated tasks by due date relative to `today` (the person's calendar day): overdue, dueToday,
    upcoming. The digest looks `within_days` ahead and leaves undated tasks out; the board looks ahead without
    a horizon (None) and asks for the `undated` ones too."""
    horizon = date.max if within_days is None else days_after(today, within_days)
    buckets: dict[str, list[OpenTask]] = {"overdue": [], "dueToday": [], "upcoming": []}
    if undated:
        buckets["undated"] = []
    for item in tasks:
        due = item.due_on
        if due is None:
            if undated:
                buckets["undated"].append(item)
            continue
        if due > horizon:
            continue
        buckets["overdue" if due < today else "dueToday" if due == today else "upcoming"].append(item)
    return buckets


@dataclass(frozen=True)
class Card:
    """One task on the board: its current status, owner and due date, the people it names, and the message
    it was first said in (its earliest status's evidence: a confirmation or a decision has none of its own)."""

    item: OpenTask
    mentions: list[Node]
    said: Evidence | None

    @property
    def task(self) -> Node:
        return self.item.task


@dataclass(frozen=True)
class Board:
    columns: dict[str, list[Card]]  # overdue, dueToday, upcoming, undated: trusted work
    candidates: list[Card]  # possible tasks waiting to be confirmed or dismissed
    owners: list[Node]  # the people (not the user) who own a task here: the owner filter's choices


def commitment_board(access: Access, *, today: date, owner: str = "anyone") -> Board:
    """Every open task in the partitions this request reads, in the digest's buckets around `today` (the
    person's calendar day) plus the undated ones, and the candidates apart. `owner`: "anyone", "me" (the
    user's own tasks and those nobody was given) or a Person node id. Five queries, however many tasks."""
    tasks = open_commitments(access, provenance="all")
    owners = {item.owner.pk: item.owner for item in tasks if item.owner is not None and not item.owner.is_self}
    if owner == "me":
        tasks = [item for item in tasks if item.owner is None or item.owner.is_self]
    elif owner != "anyone":
        tasks = [item for item in tasks if item.owner is not None and item.owner.pk == owner]
    ids = [item.task.pk for item in tasks]
    mentions: dict[str, list[Node]] = {}
    for claim in (
        Claim.objects.filter(subject_id__in=ids, predicate="MENTIONS", status=ClaimStatus.ACTIVE)
        .select_related("object_node")
        .defer(*vector_fields("object_node"))
        .order_by("object_node__label", "id")
    ):
        if claim.object_node is not None and claim.object_node not in mentions.get(str(claim.subject_id), []):
            mentions.setdefault(str(claim.subject_id), []).append(claim.object_node)
    said: dict[str, Evidence] = {}
    first_evidence = (
        Evidence.objects.filter(claim__subject_id__in=ids, claim__predicate="HAS_TASK_STATUS")
        .select_related("source")
        .defer("source__content", "source__markdown")
        .order_by("claim__subject_id", "claim__recorded_at", "id")
        .distinct("claim__subject_id")
    )
    for evidence in first_evidence.annotate(task_id=F("claim__subject_id")):
        said[str(evidence.task_id)] = evidence

    def card(item: OpenTask) -> Card:
        return Card(item=item, mentions=mentions.get(item.task.pk, []), said=said.get(item.task.pk))

    trusted = [item for item in tasks if item.trusted]
    return Board(
        columns={
            name: [card(item) for item in items]
            for name, items in due_buckets(trusted, today, None, undated=True).items()
        },
        candidates=[card(item) for item in tasks if not item.trusted],
        owners=sorted(owners.values(), key=lambda person: (person.label.casefold(), person.pk)),
    )

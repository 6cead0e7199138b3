"""The one place a task's status changes (seeds/000): every Task carries exactly one active
`HAS_TASK_STATUS` claim unless it was deliberately dismissed (its status retracted). The service keeps it so
under concurrency (the task row is locked while its status changes) and a partial unique index makes any
other path fail loudly instead of leaving two.

Bands: a status from the owner's own words or a person's decision (`user_stated`, `manual`) is trusted; one
from an inference or a default (`assistant_inferred`, `imported`, `system_default`) is a candidate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from memory.access import Access, Actor
from memory.errors import Conflict, NotFound, ValidationFailed
from memory.models import Claim, ClaimKind, ClaimOrigin, ClaimStatus, Evidence, Node, NodeType, Scope
from memory.moments import FIRST_YEAR, LAST_YEAR, is_plausible
from memory.selectors import node_for_access
from memory.services.audit import audit_record
from memory.services.embeddings import vectors_follow

STATUSES = ("pending", "in_progress", "completed", "abandoned")
TRUSTED_ORIGINS = (ClaimOrigin.USER_STATED, ClaimOrigin.MANUAL)
CANDIDATE_ORIGINS = (ClaimOrigin.ASSISTANT_INFERRED, ClaimOrigin.IMPORTED, ClaimOrigin.SYSTEM_DEFAULT)


def current_status(task: Node) -> Claim | None:
    return Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS", status=ClaimStatus.ACTIVE).first()


def task_lock(task: Node) -> None:
    """Inside a transaction: one change of a task's status, owner or due date at a time. Take it before
    reading what is current, or a concurrent change can be undone by a stale read. A task erased meanwhile
    is not found."""
    if Node.objects.select_for_update().filter(pk=task.pk).values_list("pk", flat=True).first() is None:
        raise NotFound("No such task.", details={"taskId": task.pk})


@transaction.atomic
def status_set(
    task: Node,
    status: str,
    *,
    actor: Actor,
    origin: str,
    extractor: str = "",
    evidence: dict[str, Any] | None = None,
    quarantined: bool = False,
    derived_from: Claim | None = None,
) -> Claim:
    """Make `status` the task's current status: the previous one is superseded (kept in history) first, so
    there is never a moment with two. A quarantined status supersedes nothing."""
    if task.type != NodeType.TASK:
        raise ValueError(f"{task.pk} is a {task.type}, not a Task")
    task_lock(task)
    now = timezone.now()
    previous = None if quarantined else current_status(task)
    if previous is not None:
        Claim.objects.filter(pk=previous.pk).update(status=ClaimStatus.SUPERSEDED, valid_until=now, updated_at=now)
    stated = (evidence or {}).get("authored_at") or now
    claim = Claim.objects.create(
        owner_id=task.owner_id,
        partition_id=task.partition_id,
        scope=task.scope,
        statement=f"{task.label}: {status.replace('_', ' ')}",
        kind=ClaimKind.TASK_STATUS,
        subject=task,
        predicate="HAS_TASK_STATUS",
        object_value=status,
        status=ClaimStatus.QUARANTINED if quarantined else ClaimStatus.ACTIVE,
        origin=origin,
        extractor=extractor,
        valid_from=stated,
        stated_at=stated,
        derived_from=derived_from or previous,
    )
    if evidence is not None:
        Evidence.objects.create(
            owner_id=task.owner_id, claim=claim, source_id=evidence["source_id"], excerpt=evidence["excerpt"],
            message_id=evidence.get("message_id", ""), authored_at=evidence.get("authored_at"),
        )  # fmt: skip
    if previous is not None:
        Claim.objects.filter(pk=previous.pk).update(superseded_by=claim)
    audit_record(
        actor=actor, owner=task.owner, action="task.status", target=task, partition=task.partition,
        before={"status": previous.object_value if previous else None},
        after={"status": status, "origin": origin, "claimId": claim.pk, "quarantined": quarantined},
    )  # fmt: skip
    return claim


@transaction.atomic
def task_create(
    *,
    owner: Any,
    partition: Any,
    label: str,
    actor: Actor,
    status: str | None = None,
    origin: str = ClaimOrigin.ASSISTANT_INFERRED,
    scope: str = "personal",
) -> tuple[Node, Claim]:
    """A Task never exists without a status: with none given it gets a candidate-band `pending`
    (assistant-inferred, as seeds/000 says), for the owner to confirm or dismiss."""
    task = Node.objects.create(owner=owner, partition=partition, type=NodeType.TASK, label=label, scope=scope)
    audit_record(actor=actor, owner=owner, action="task.create", target=task, partition=partition,
                 after={"label": label})  # fmt: skip
    chosen_origin = origin if status is not None else ClaimOrigin.ASSISTANT_INFERRED
    claim = status_set(task, status or "pending", actor=actor, origin=chosen_origin)
    return task, claim


def _task_for_write(access: Access, task_id: str) -> Node:
    access.require_scope(Scope.WRITE)
    try:
        task = node_for_access(access, task_id)
    except NotFound:
        task = None
    if task is None or task.type != NodeType.TASK or task.merged_into_id:
        raise NotFound("No such task.", details={"taskId": task_id})
    access.check_write(task.partition)
    return task


@transaction.atomic
def commitment_set_status(access: Access, task_id: str, status: str) -> Claim:
    """A person's decision: the task's status becomes `status` (trusted band), whatever it was."""
    if status not in STATUSES:
        raise ValidationFailed("Unknown status.", details={"status": [f"One of {', '.join(STATUSES)}."]})
    task = _task_for_write(access, task_id)
    return status_set(task, status, actor=access.actor, origin=ClaimOrigin.MANUAL)


@transaction.atomic
def commitment_confirm(access: Access, task_id: str) -> Claim:
    """A candidate becomes trusted work: its current status again, now as the owner's decision."""
    task = _task_for_write(access, task_id)
    task_lock(task)
    current = current_status(task)
    if current is None:
        raise Conflict("This task was dismissed; set a status to bring it back.", details={"taskId": task_id})
    if current.origin in TRUSTED_ORIGINS:
        return current
    return status_set(task, str(current.object_value), actor=access.actor, origin=ClaimOrigin.MANUAL)


@transaction.atomic
def commitment_dismiss(access: Access, task_id: str) -> Node:
    """Not a commitment at all: the current status is retracted, so the task leaves every commitment view and
    recovery leaves it alone (it has a status claim, retracted). History is kept; set-status brings it back."""
    task = _task_for_write(access, task_id)
    task_lock(task)
    current = current_status(task)
    if current is None:
        if Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS").exists():
            return task  # dismissed already (or held in quarantine)
        # A statusless task: give it a status to retract, so recovery knows it was dismissed on purpose.
        current = status_set(task, "pending", actor=access.actor, origin=ClaimOrigin.MANUAL)
    Claim.objects.filter(pk=current.pk).update(
        status=ClaimStatus.RETRACTED, valid_until=timezone.now(), updated_at=timezone.now()
    )
    audit_record(
        actor=access.actor, owner=access.user, action="task.dismiss", target=task, partition=task.partition,
        before={"status": current.object_value}, after={"status": None},
    )  # fmt: skip
    return task


@transaction.atomic
def commitment_reschedule(access: Access, task_id: str, *, due_on: date) -> Claim:
    """A person's decision on when a task is due: a manual `DUE_ON` that supersedes the current one. Reconcile
    never moves or clears a manual date, so later messages cannot undo it. The same date again writes
    nothing."""
    if not is_plausible(due_on):
        raise ValidationFailed(
            "That date is out of range.", details={"dueOn": [f"A date from {FIRST_YEAR} to {LAST_YEAR}."]}
        )
    task = _task_for_write(access, task_id)
    task_lock(task)  # before reading the current date: a pipeline job may be changing it
    current = Claim.objects.filter(subject=task, predicate="DUE_ON", status=ClaimStatus.ACTIVE).first()
    if current is not None and current.origin == ClaimOrigin.MANUAL and current.object_value == due_on.isoformat():
        return current
    now = timezone.now()
    if current is not None:  # stepped down first, as every single-valued fact is replaced
        Claim.objects.filter(pk=current.pk).update(status=ClaimStatus.SUPERSEDED, valid_until=now, updated_at=now)
    claim = Claim.objects.create(
        owner_id=task.owner_id, partition_id=task.partition_id, scope=task.scope,
        statement=f"{task.label}: due {due_on.isoformat()}", kind=ClaimKind.FACT, subject=task, predicate="DUE_ON",
        object_value=due_on.isoformat(), status=ClaimStatus.ACTIVE, origin=ClaimOrigin.MANUAL, derived_from=current,
        valid_from=now, stated_at=now,
    )  # fmt: skip
    if current is not None:
        Claim.objects.filter(pk=current.pk).update(superseded_by=claim)
    audit_record(
        actor=access.actor, owner=task.owner, action="task.reschedule", target=task, partition=task.partition,
        before={"dueOn": current.object_value if current else None},
        after={"dueOn": due_on.isoformat(), "claimId": claim.pk},
    )  # fmt: skip
    vectors_follow(task.owner_id)
    return claim


def status_word(text: Any) -> str | None:
    """The status a person's words name ("completed", "In progress", "in-progress"), or None."""
    word = str(text or "").strip().lower().replace("-", "_").replace(" ", "_").rstrip(".")
    return word if word in STATUSES else None


@transaction.atomic
def status_claim_revise(*, actor: Actor, claim: Claim, status: str, confirm: bool = False) -> Claim:
    """A correction or confirmation of one status claim is a status change by the owner: it goes through
    `status_set` (so the task keeps one active status) and the revised claim is superseded by the new one."""
    task = claim.subject
    if task is None:
        raise ValueError(f"{claim.pk} has no task")
    task_lock(task)
    claim.refresh_from_db()
    new = status_set(task, status, actor=actor, origin=ClaimOrigin.MANUAL, derived_from=claim)
    if claim.status != ClaimStatus.SUPERSEDED:  # it was not the active one (quarantined, suggested)
        now = timezone.now()
        Claim.objects.filter(pk=claim.pk).update(
            status=ClaimStatus.SUPERSEDED, superseded_by=new, valid_until=now, updated_at=now
        )
    audit_record(
        actor=actor, owner=task.owner, action="claim.confirm" if confirm else "claim.correct", target=new,
        partition=new.partition, before={"claimId": claim.pk, "status": claim.object_value},
        after={"claimId": new.pk, "status": status},
    )  # fmt: skip
    return new


@dataclass(frozen=True)
class Recovery:
    found: int
    recovered: int
    sample: list[Node]


def recover_statusless(access: Access, *, dry_run: bool = True, sample_size: int = 20) -> Recovery:
    """Tasks with no HAS_TASK_STATUS claim in any state (a bug: invisible to every commitment view) get a
    candidate-band `pending`. Dismissed tasks keep their retracted status and are left alone. Additive and
    idempotent; a dry run only counts."""
    access.require_scope(Scope.MAINTENANCE if not dry_run else Scope.READ)
    statuses = Claim.objects.filter(subject=OuterRef("pk"), predicate="HAS_TASK_STATUS")
    statusless = (
        Node.objects.filter(
            owner=access.user, partition__in=access.read_partitions, type=NodeType.TASK, merged_into__isnull=True
        )
        .exclude(Exists(statuses))
        .order_by("id")
    )
    found = statusless.count()
    sample = list(statusless[:sample_size])
    if dry_run:
        return Recovery(found=found, recovered=0, sample=sample)
    recovered = 0
    for task in statusless.iterator():
        with transaction.atomic():
            if not Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS").exists():
                status_set(task, "pending", actor=access.actor, origin=ClaimOrigin.ASSISTANT_INFERRED)
                recovered += 1
    return Recovery(found=found, recovered=recovered, sample=sample)

"""The one place a task's status changes (seeds/000): every Task carries exactly one active
`HAS_TASK_STATUS` claim unless it was deliberately dismissed (its status retracted). The service keeps it so
under concurrency (the task row is locked while its status changes) and a partial unique index makes any
other path fail loudly instead of leaving two.

Bands: a status from the owner's own words or a person's decision (`user_stated`, `manual`) is trusted; one
from an inference or a default (`assistant_inferred`, `imported`, `system_default`) is a candidate.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.access import Actor
from memory.models import Claim, ClaimKind, ClaimOrigin, ClaimStatus, Evidence, Node, NodeType
from memory.services.audit import audit_record

STATUSES = ("pending", "in_progress", "completed", "abandoned")
TRUSTED_ORIGINS = (ClaimOrigin.USER_STATED, ClaimOrigin.MANUAL)
CANDIDATE_ORIGINS = (ClaimOrigin.ASSISTANT_INFERRED, ClaimOrigin.IMPORTED, ClaimOrigin.SYSTEM_DEFAULT)


def current_status(task: Node) -> Claim | None:
    return Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS", status=ClaimStatus.ACTIVE).first()


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
    Node.objects.select_for_update().filter(pk=task.pk).first()  # one status change per task at a time
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
    origin: str = ClaimOrigin.SYSTEM_DEFAULT,
    scope: str = "personal",
) -> tuple[Node, Claim]:
    """A Task never exists without a status: with none given it gets a candidate-band `pending`."""
    task = Node.objects.create(owner=owner, partition=partition, type=NodeType.TASK, label=label, scope=scope)
    audit_record(actor=actor, owner=owner, action="task.create", target=task, partition=partition,
                 after={"label": label})  # fmt: skip
    given = status is not None
    claim = status_set(task, status or "pending", actor=actor, origin=origin if given else ClaimOrigin.SYSTEM_DEFAULT)
    return task, claim

"""The JSON of an open commitment (seeds/000 `/commitments/open` shape), shared by every surface."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from commitments.selectors import OpenTask
from memory.api.openapi import maybe_text, maybe_when, one, shape, text
from memory.recall.render import CommitmentLine

CommitmentOut = shape(
    "CommitmentOut",
    taskId=text(), label=text(), status=text(),
    owner=one(shape("TaskOwnerOut", nodeId=text(), label=text()), allow_null=True),
    dueOn=serializers.DateField(allow_null=True), statedAt=maybe_when(), sourceId=maybe_text(),
    provenance=text(help_text="trusted or candidate"), origin=text(), statusClaimId=text(),
    partitionKey=text(),
)  # fmt: skip


def commitment_json(item: OpenTask) -> dict[str, Any]:
    """`owner` is null both for the user's own tasks (their Self node) and for tasks nobody was given."""
    owner = item.owner if item.owner is not None and not item.owner.is_self else None
    return {
        "taskId": item.task.pk,
        "label": item.task.label,
        "status": item.status.object_value,
        "owner": {"nodeId": owner.pk, "label": owner.label} if owner else None,
        "dueOn": item.due_on.isoformat() if item.due_on else None,
        "statedAt": item.status.stated_at,
        "sourceId": item.source_id,
        "provenance": "trusted" if item.trusted else "candidate",
        "origin": item.status.origin,
        "statusClaimId": item.status.pk,
        "partitionKey": item.status.partition.key,
    }


def commitment_line(item: OpenTask) -> CommitmentLine:
    owner = item.owner.label if item.owner is not None and not item.owner.is_self else None
    due = item.due_on.isoformat() if item.due_on else None
    return CommitmentLine(
        task_id=item.task.pk, label=item.task.label, status=str(item.status.object_value), owner=owner, due_on=due,
        source_id=item.source_id,
    )  # fmt: skip

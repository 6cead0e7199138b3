"""Commitments over REST (seeds/000): what is open, the candidate and trusted bands, and a person's decisions
on them. Open work comes from the current `HAS_TASK_STATUS` of each task, never from search hits."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from commitments.presenters import CommitmentOut, commitment_json, commitment_line
from commitments.selectors import OPEN_STATUSES, PROVENANCE, open_commitments
from commitments.services import (
    STATUSES,
    Recovery,
    commitment_confirm,
    commitment_dismiss,
    commitment_set_status,
    recover_statusless,
)
from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.fields import plausible_time
from memory.api.openapi import count, flag, many, shape, text
from memory.models import Claim
from memory.recall.render import render_memory

TASK_EXAMPLE = {"taskId": "node_01kq5509kfe4a94mj5k20j5z6y"}


CommitmentsOut = shape(
    "CommitmentsOut", commitments=many(CommitmentOut), formattedResult=text(required=False, help_text="On request.")
)
TaskStatusOut = shape(
    "TaskStatusOut", taskId=text(), status=text(), provenance=text(help_text="trusted or candidate"),
    statusClaimId=text(),
)  # fmt: skip
RecoveryOut = shape(
    "RecoveryOut", dryRun=flag(), found=count(), recovered=count(),
    sample=many(shape("TaskSampleOut", taskId=text(), label=text())),
)  # fmt: skip


class OpenIn(RequestSerializer):
    ownedBy = serializers.CharField(max_length=40, required=False, help_text="A Person node id.")
    dueBefore = serializers.DateField(
        required=False, validators=[plausible_time], help_text="Inclusive; undated tasks are left out."
    )
    includeFormattedResult = serializers.BooleanField(default=False)


class CommitmentsOpen(Endpoint):
    """Open work, the source of truth for what is pending: tasks whose newest active status is pending or
    in_progress, trusted band only (the user's own words or decisions). `owner` is null for the user's own
    tasks and for unassigned ones. Use it before saying anything about outstanding, next, pending, completed
    or abandoned work; never infer pending work from search results."""

    tool = "commitments.open"
    response_schema = CommitmentsOut
    request_serializer = OpenIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        tasks = open_commitments(access, owned_by=data.get("ownedBy"), due_before=data.get("dueBefore"))
        answer: dict[str, Any] = {"commitments": [commitment_json(item) for item in tasks]}
        if data["includeFormattedResult"]:
            answer["formattedResult"] = render_memory(commitments=[commitment_line(item) for item in tasks])
        return answer


class CommitmentListIn(OpenIn):
    provenance = serializers.ChoiceField(choices=list(PROVENANCE), default="all")
    status = serializers.ListField(
        child=serializers.ChoiceField(choices=STATUSES), required=False, default=list(OPEN_STATUSES), max_length=4
    )


class CommitmentsList(Endpoint):
    """Tasks by band (`provenance`: trusted, candidate or all) and status (default pending and in_progress).
    Candidates are possible follow-ups, such as tentative requests: confirm or dismiss them."""

    tool = "commitments.list"
    response_schema = CommitmentsOut
    request_serializer = CommitmentListIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        tasks = open_commitments(
            access, owned_by=data.get("ownedBy"), due_before=data.get("dueBefore"), provenance=data["provenance"],
            statuses=tuple(data["status"] or STATUSES),
        )  # fmt: skip
        answer: dict[str, Any] = {"commitments": [commitment_json(item) for item in tasks]}
        if data["includeFormattedResult"]:
            answer["formattedResult"] = render_memory(commitments=[commitment_line(item) for item in tasks])
        return answer


class TaskIn(RequestSerializer):
    taskId = serializers.CharField(max_length=40)


def status_json(claim: Claim) -> dict[str, Any]:
    return {
        "taskId": claim.subject_id,
        "status": claim.object_value,
        "provenance": "trusted" if claim.origin in PROVENANCE["trusted"] else "candidate",
        "statusClaimId": claim.pk,
    }


class CommitmentsConfirm(Endpoint):
    """Confirm a candidate (needs `write`): its current status becomes the user's decision (trusted band)."""

    tool = "commitments.confirm"
    response_schema = TaskStatusOut
    request_serializer = TaskIn
    example_request = TASK_EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return status_json(commitment_confirm(access, data["taskId"]))


class CommitmentsDismiss(Endpoint):
    """Dismiss a task (needs `write`): not a commitment. It leaves every commitment view; history is kept and
    set-status brings it back."""

    tool = "commitments.dismiss"
    response_schema = shape("TaskDismissedOut", taskId=text(), dismissed=flag())
    request_serializer = TaskIn
    example_request = TASK_EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        task = commitment_dismiss(access, data["taskId"])
        return {"taskId": task.pk, "dismissed": True}


class SetStatusIn(TaskIn):
    status = serializers.ChoiceField(choices=STATUSES)


class CommitmentsSetStatus(Endpoint):
    """Set a task's status (needs `write`): completed, abandoned, in_progress or pending, as the user's decision."""

    tool = "commitments.set_status"
    response_schema = TaskStatusOut
    request_serializer = SetStatusIn
    example_request = {**TASK_EXAMPLE, "status": "completed"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return status_json(commitment_set_status(access, data["taskId"], data["status"]))


class RecoverIn(RequestSerializer):
    dryRun = serializers.BooleanField(default=True)


def recovery_json(access: Access, dry_run: bool) -> dict[str, Any]:
    return recovery_answer(recover_statusless(access, dry_run=dry_run), dry_run)


def recovery_answer(result: Recovery, dry_run: bool) -> dict[str, Any]:
    """A recovery's answer, as /maintenance/recover-statusless-commitments and /cleanup give it."""
    return {
        "dryRun": dry_run,
        "found": result.found,
        "recovered": result.recovered,
        "sample": [{"taskId": task.pk, "label": task.label} for task in result.sample],
    }


class RecoverStatuslessCommitments(Endpoint):
    """Give tasks with no status at all (a bug: invisible to every commitment view) a candidate `pending`, so
    they can be confirmed or dismissed. A dry run (the default) counts and shows a sample; applying needs
    `maintenance`. Dismissed tasks are left alone. Additive and idempotent."""

    tool = "maintenance.recover_statusless_commitments"
    response_schema = RecoveryOut
    request_serializer = RecoverIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return recovery_json(access, data["dryRun"])

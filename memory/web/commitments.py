"""`/ui/commitments/`, the board: open tasks overdue / due today / upcoming / undated in the person's time
zone, the candidates apart, and a person's decisions on each task. Every decision is one POST to one service
of commitments/services.py (the same as /commitments/*: one active status per task)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from commitments.selectors import commitment_board
from commitments.services import (
    commitment_confirm,
    commitment_dismiss,
    commitment_reschedule,
    commitment_set_status,
)
from memory.access import Access
from memory.models import Claim, Node
from memory.web.access import narrowed_access, web_access
from memory.web.actions import back, found, perform
from memory.web.zone import person_zone, zone_chosen

BOARD = "/ui/commitments/"
COLUMNS = (
    ("overdue", "Overdue", "Nothing overdue."),
    ("dueToday", "Due today", "Nothing due today."),
    ("upcoming", "Upcoming", "Nothing planned yet."),
    ("undated", "No date", "Every task has a date."),
)


@login_required
@require_GET
def board(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    partitions = list(access.read_partitions)
    access, partition = narrowed_access(request, access)
    owner = request.GET.get("owner") or "anyone"
    zone = person_zone(request)
    today = timezone.localtime(timezone.now(), zone).date()
    tasks = found(lambda: commitment_board(access, today=today, owner=owner))
    columns = [(key, title, empty, tasks.columns[key]) for key, title, empty in COLUMNS]
    return render(
        request,
        "ui/commitments/board.html",
        {
            "board": tasks,
            "columns": columns,
            "open_count": sum(len(cards) for *_, cards in columns),
            "today": today,
            "zone": zone.key,
            "zone_chosen": zone_chosen(request),
            "owner": owner,
            "partitions": partitions,
            "partition": partition,
            "workspace": len(partitions) > 1,
        },
    )


def _decision(service: Callable[[Access, str], Claim | Node], done: str) -> Callable[[HttpRequest, str], HttpResponse]:
    """A view for one decision on the task in the URL, then back to the board (its filters kept). `done`
    names the task: `{label}`."""

    @login_required
    @require_POST
    def view(request: HttpRequest, task_id: str) -> HttpResponse:
        access = web_access(request)
        result = perform(request, lambda: service(access, task_id))
        if result is not None:
            task = result if isinstance(result, Node) else result.subject
            messages.success(request, done.format(label=task.label if task else "The task"))
        return back(request, BOARD)

    return view


complete = _decision(lambda a, i: commitment_set_status(a, i, "completed"), "Completed “{label}”: it left the board.")
abandon = _decision(lambda a, i: commitment_set_status(a, i, "abandoned"), "Abandoned “{label}”: it left the board.")
confirm = _decision(commitment_confirm, "Confirmed “{label}”: it is on the board now.")
dismiss = _decision(commitment_dismiss, "Dismissed “{label}”: not a task.")


@login_required
@require_POST
def reschedule(request: HttpRequest, task_id: str) -> HttpResponse:
    access = web_access(request)
    try:
        due_on = date.fromisoformat(request.POST.get("due_on", ""))
    except ValueError:
        messages.error(request, "Pick the date the task is due (year, month and day).")
        return back(request, BOARD)
    done = f"Rescheduled: due {due_on:%a} {due_on.day} {due_on:%b %Y}."
    perform(request, lambda: commitment_reschedule(access, task_id, due_on=due_on), done=done)
    return back(request, BOARD)

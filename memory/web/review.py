"""The review queue, /ui/review/: suggested claims beside the claim they conflict with, quarantined writes,
candidate tasks and metrics that may be duplicates. Each decision is one POST to one service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from commitments.services import commitment_confirm, commitment_dismiss
from memory.access import Access
from memory.review_queue import review_decisions, review_queue
from memory.services.claims import claim_confirm, claim_erase
from memory.services.review import review_accept, review_keep_both, review_keep_old
from memory.web.access import web_access
from memory.web.actions import back, found, perform
from metrics.services import metric_keep, metric_merge

QUEUE = "/ui/review/"


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    context = {"queue": found(lambda: review_queue(access)), "decisions": found(lambda: review_decisions(access))}
    return render(request, "ui/review/queue.html", context)


def _decision(service: Callable[[Access, str], Any], done: str) -> Callable[[HttpRequest, str], HttpResponse]:
    """A view for one decision: the service, applied to the object in the URL, then back to the queue."""

    @login_required
    @require_POST
    def view(request: HttpRequest, object_id: str) -> HttpResponse:
        access = web_access(request)
        perform(request, lambda: service(access, object_id), done=done)
        return back(request, QUEUE)

    return view


accept = _decision(lambda a, i: review_accept(access=a, claim_id=i), "Accepted: the new claim replaces the old one.")
keep_old = _decision(
    lambda a, i: review_keep_old(access=a, claim_id=i), "Kept the old claim; the suggestion is dismissed."
)
keep_both = _decision(lambda a, i: review_keep_both(access=a, claim_id=i), "Kept both claims.")
quarantine_confirm = _decision(lambda a, i: claim_confirm(access=a, claim_id=i), "Confirmed: the claim is active.")
quarantine_erase = _decision(lambda a, i: claim_erase(access=a, claim_id=i), "Erased.")
task_confirm = _decision(lambda a, i: commitment_confirm(a, i), "Confirmed: the task is in your commitments.")
task_dismiss = _decision(lambda a, i: commitment_dismiss(a, i), "Dismissed the task.")
metric_keep_view = _decision(lambda a, i: metric_keep(a, metric_id=i), "Kept as a separate metric.")
metric_merge_view = _decision(lambda a, i: metric_merge(a, metric_id=i), "Merged into the existing metric.")

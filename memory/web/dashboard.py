"""`/ui/`: the dashboard. Counts, recent changes and the processing queue (kept live by static/js/queue.js
from the `/ws/events/` websocket)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memory import dashboard
from memory.models import Operation
from memory.pipeline.steps import PIPELINE
from memory.web.access import web_access

STEPS = [step.name for step in PIPELINE]


@login_required
def home(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    return render(
        request,
        "ui/dashboard/home.html",
        {
            "counts": dashboard.dashboard_counts(access),
            "events": dashboard.recent_events(access),
            "operations": [_with_done_steps(op) for op in dashboard.recent_operations(access)],
            "steps": STEPS,
            "partition_ids": ",".join(partition.pk for partition in access.read_partitions),
        },
    )


def _with_done_steps(operation: Operation) -> Operation:
    """The names of the steps already run, for the template (steps_done holds one record per step)."""
    operation.done_names = [str(done.get("step")) for done in operation.steps_done]  # type: ignore[attr-defined]
    return operation

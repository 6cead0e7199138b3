"""`/ui/activity/`: the audit trail of the person's memory in the partitions in view, in words: who did what,
to which object, through which surface. Read only; every row links to its object's page while it exists."""

from __future__ import annotations

from datetime import date

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memory.activity import TARGETS, WHO, WORDS, activity_for_access
from memory.models import ChangeSurface
from memory.web.access import web_access
from memory.web.actions import perform

SURFACES = [(value or "unknown", label) for value, label in ChangeSurface.choices]


def _day(text: str | None) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:  # a hand-edited address: the filter is dropped, not an error page
        return None


@login_required
def activity(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    action = request.GET.get("action") or ""
    target = request.GET.get("target") or ""
    who = request.GET.get("who") or ""
    surface = request.GET.get("surface") or ""
    since, until = _day(request.GET.get("since")), _day(request.GET.get("until"))
    page = perform(
        request,
        lambda: activity_for_access(
            access,
            action=action if action in WORDS else None,
            target_type=target if target in TARGETS else None,
            who=who if who in WHO else None,
            surface=("" if surface == "unknown" else surface) if surface in dict(SURFACES) else None,
            since=since,
            until=until,
            cursor=request.GET.get("cursor") or None,
            limit=50,
        ),
    )
    query = request.GET.copy()
    query.pop("cursor", None)
    return render(
        request,
        "ui/activity/list.html",
        {
            "page": page,
            "actions": sorted(WORDS.items(), key=lambda item: item[1]),
            "targets": sorted(TARGETS.items(), key=lambda item: item[1]),
            "whos": WHO.items(),
            "surfaces": SURFACES,
            "chosen": {"action": action, "target": target, "who": who, "surface": surface},
            "since": since.isoformat() if since else "",
            "until": until.isoformat() if until else "",
            "filters": query.urlencode(),
            "partitions": access.read_partitions,
        },
    )

"""The web UI's shared views (SPEC §10): the partition switcher. Each page has its own module."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from memory import selectors
from memory.access import access_for_user
from memory.models import ChangeSurface
from memory.web.access import ALL, SESSION_KEY
from memory.web.actions import back


@login_required
@require_POST
def switch_partition(request: HttpRequest) -> HttpResponse:
    """Remember the partition the pages read (one of the person's active partitions, or all of them)."""
    choice = request.POST.get("partition", "")
    access = access_for_user(user=request.user, surface=ChangeSurface.UI)  # type: ignore[arg-type]
    active = set(selectors.partitions_for_access(access, active_only=True).values_list("key", flat=True))
    if choice == ALL or choice in active:
        request.session[SESSION_KEY] = choice
    return back(request, "/ui/")

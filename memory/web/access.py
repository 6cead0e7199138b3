"""What a web request may reach: the signed-in person's memory, through the partition chosen in the header.

The choice is kept in the session: one partition (strict, the default: `memory:personal`) or every active
partition ("all partitions", the workspace view). Writes always go to the chosen partition, or to the
personal one in the workspace view, as with REST.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from memory import selectors
from memory.access import Access, access_for_user
from memory.errors import NotFound
from memory.models import ChangeSurface
from memory.models.accounts import PERSONAL_PARTITION_KEY

SESSION_KEY = "ui.partition"
ALL = "*"  # the workspace view


def chosen_partition(request: HttpRequest) -> str:
    return str(request.session.get(SESSION_KEY) or PERSONAL_PARTITION_KEY)


def web_access(request: HttpRequest) -> Access:
    """Access for this request; a remembered partition that is gone falls back to the personal one."""
    choice = chosen_partition(request)
    user: Any = request.user
    if choice == ALL:
        return access_for_user(user=user, workspace=True, surface=ChangeSurface.UI)
    try:
        access = access_for_user(user=user, partition_key=choice, surface=ChangeSurface.UI)
    except NotFound:  # erased since it was chosen
        access = None
    if access is None or access.partition is None or not access.partition.is_active:
        request.session[SESSION_KEY] = PERSONAL_PARTITION_KEY
        return access_for_user(user=user, surface=ChangeSurface.UI)
    return access


def narrowed_access(request: HttpRequest, access: Access) -> tuple[Access, str]:
    """In the workspace view, a page's `?partition=` filter narrows it to one of the partitions in view; the
    access for that (or the one given) and the key the filter now holds ("" when it does not narrow)."""
    key = request.GET.get("partition") or ""
    partitions = access.read_partitions
    if len(partitions) < 2 or key not in {partition.key for partition in partitions}:
        return access, ""
    user: Any = request.user
    return access_for_user(user=user, partition_key=key, surface=ChangeSurface.UI), key


def partition_header(request: HttpRequest) -> dict[str, Any]:
    """Template context for the header's partition switcher (a context processor)."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    access = access_for_user(user=request.user, surface=ChangeSurface.UI)
    partitions = [p for p in selectors.partitions_for_access(access) if p.is_active]
    return {"ui_partitions": partitions, "ui_partition": chosen_partition(request), "ui_all": ALL}

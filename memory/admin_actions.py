"""Admin actions that need a page of their own: merging entities, with the preview node_merge gives first."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from memory.access import Actor, access_for_user
from memory.errors import ServiceError
from memory.models import Node
from memory.services.nodes import MergePlan, node_merge


@admin.action(description="Merge the selected entities into one (preview first)")
def merge_nodes(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Node]) -> HttpResponse | None:
    """Two or more entities of one person, one type and one partition: a page shows what each merge moves into
    the chosen target (node_merge's preview); its "Merge" button applies them all, or none."""
    nodes = list(queryset.select_related("owner", "partition").order_by("created_at", "id"))
    if len(nodes) < 2 or len({(n.owner_id, n.partition_id, n.type) for n in nodes}) != 1:
        modeladmin.message_user(
            request, "Select two or more entities of the same type in the same partition.", messages.ERROR
        )
        return None
    by_id = {node.pk: node for node in nodes}
    target = by_id.get(request.POST.get("target", "")) or nodes[0]
    acting = Actor.admin(request.user)  # type: ignore[arg-type]
    access = access_for_user(user=nodes[0].owner, partition_key=nodes[0].partition.key, acting=acting)
    # The merge applies only to the target that was previewed; a target changed on the page is previewed first.
    apply = request.POST.get("merge") == "yes" and request.POST.get("previewed") == target.pk
    try:
        with transaction.atomic():
            plans = [
                node_merge(access=access, source_id=node.pk, target_id=target.pk, apply=apply)
                for node in nodes
                if node.pk != target.pk
            ]
    except ServiceError as exc:
        modeladmin.message_user(request, f"Nothing was merged: {exc.message}", messages.ERROR)
        return None
    if apply:
        moved = sum(plan.claims for plan in plans)
        modeladmin.message_user(
            request, f"Merged {len(plans)} entities into \u201c{target.label}\u201d ({moved} claims moved)."
        )
        return None
    return _preview(modeladmin, request, nodes, target, plans)


def _preview(
    modeladmin: admin.ModelAdmin, request: HttpRequest, nodes: list[Node], target: Node, plans: list[MergePlan]
) -> HttpResponse:
    context: dict[str, Any] = {
        **modeladmin.admin_site.each_context(request), "title": "Merge these entities?", "opts": modeladmin.opts,
        "nodes": nodes, "target": target, "plans": plans, "action_checkbox_name": ACTION_CHECKBOX_NAME,
        "totals": {key: sum(getattr(plan, key) for plan in plans) for key in ("claims", "aliases", "evidence")},
    }  # fmt: skip
    return TemplateResponse(request, "admin/memory/node/merge_preview.html", context)

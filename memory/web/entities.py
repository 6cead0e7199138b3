"""/ui/entities/: the people, organisations, projects, places and tasks of a memory (the selector of /node/list),
one entity with its claims, names and neighbourhood, and its changes through memory.services.nodes: rename,
aliases, merge (preview, then apply) and delete (confirmation, then erase)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_POST

from memory import selectors
from memory.access import Access
from memory.models import Node, NodeType
from memory.names import normalize_name
from memory.services import nodes
from memory.web.access import web_access
from memory.web.actions import back, found, perform

PAGE_SIZE = 25
CANDIDATES = 12
CLAIMS_SHOWN = 100
# What the list offers: the things a person talks about (not the self node, events, topics, documents, metrics).
ENTITY_TYPES = [NodeType.PERSON, NodeType.ORGANIZATION, NodeType.PROJECT, NodeType.PLACE, NodeType.TASK]
TYPE_WORDS: dict[str, str] = {
    NodeType.PERSON: "person",
    NodeType.ORGANIZATION: "organisation",
    NodeType.PROJECT: "project",
    NodeType.PLACE: "place",
    NodeType.TASK: "task",
}


def _url(node: Node | str) -> str:
    return f"/ui/entities/{node.pk if isinstance(node, Node) else node}/"


@login_required
def entity_list(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    chosen = request.GET.get("type", "")
    types = [chosen] if chosen in ENTITY_TYPES else [str(t) for t in ENTITY_TYPES]
    words = request.GET.get("q", "").strip()[:300] or None
    cursor = request.GET.get("cursor") or None
    page = perform(
        request, lambda: selectors.nodes_for_access(access, types=types, label=words, cursor=cursor, limit=PAGE_SIZE)
    )
    query = request.GET.copy()
    query.pop("cursor", None)
    context = {
        "entities": page[0] if page else [],
        "next_cursor": page[1] if page else None,
        "paged": bool(cursor),
        "filter_query": query.urlencode(),
        "q": words or "",
        "chosen": chosen if chosen in ENTITY_TYPES else "",
        "types": [(t.value, TYPE_WORDS[t.value]) for t in ENTITY_TYPES],
    }
    return render(request, "ui/entities/list.html", context)


def _entity(access: Access, node_id: str) -> Node:
    return found(lambda: selectors.node_for_access(access, node_id))


def _merged_target(access: Access, node: Node) -> Node | None:
    """Where a merged entity lives now (merges chain: A into B, then B into C); None if it was not merged."""
    if not node.merged_into_id:
        return None
    current = node
    while current.merged_into_id:
        current = _entity(access, current.merged_into_id)
    return current


@login_required
def entity_detail(request: HttpRequest, node_id: str) -> HttpResponse:
    access = web_access(request)
    node = _entity(access, node_id)
    target = _merged_target(access, node)
    if target is not None:
        messages.info(request, f"“{node.label}” was merged into “{target.label}”.")
        return HttpResponseRedirect(_url(target))
    about = selectors.claims_for_access(access, subject_id=node.pk, limit=CLAIMS_SHOWN).claims
    mentioning = selectors.claims_for_access(access, object_node_id=node.pk, limit=CLAIMS_SHOWN).claims
    neighbours, links = selectors.node_neighborhood(access, node)
    graph = {
        "center": _graph_node(node),
        "nodes": [_graph_node(other) for other in neighbours],
        "links": [{"source": c.subject_id, "target": c.object_node_id, "label": c.statement} for c in links],
    }
    context = {
        "node": node,
        "type_word": TYPE_WORDS.get(node.type, node.type.lower()),
        "about": about,
        "mentioning": mentioning,
        # Its own label is one of its aliases (how it is matched); the page lists only the other names.
        "aliases": node.aliases.exclude(normalized=normalize_name(node.label)).order_by("name"),
        "neighbours": neighbours,
        "graph": graph,
    }
    return render(request, "ui/entities/detail.html", context)


def _graph_node(node: Node) -> dict[str, str]:
    return {"id": node.pk, "label": node.label, "type": node.type, "url": _url(node)}


@login_required
@require_POST
def entity_rename(request: HttpRequest, node_id: str) -> HttpResponse:
    access = web_access(request)
    label = request.POST.get("label", "").strip()[:300]
    perform(
        request,
        lambda: nodes.node_update(access=access, node_id=node_id, label=label),
        done="Renamed. The old name stays as an alias, so it is still recognised.",
    )
    return HttpResponseRedirect(_url(node_id))


@login_required
@require_POST
def alias_add(request: HttpRequest, node_id: str) -> HttpResponse:
    access = web_access(request)
    name = request.POST.get("name", "")[:300]
    perform(request, lambda: nodes.alias_add(access=access, node_id=node_id, name=name), done=f"Added “{name}”.")
    return back(request, _url(node_id))


@login_required
@require_POST
def alias_remove(request: HttpRequest, node_id: str) -> HttpResponse:
    access = web_access(request)
    name = request.POST.get("name", "")[:300]
    removed = perform(request, lambda: nodes.alias_remove(access=access, node_id=node_id, name=name))
    if removed:
        messages.success(request, f"Removed “{name}”.")
    elif removed == 0:
        messages.info(request, f"“{name}” was not one of its names.")
    return back(request, _url(node_id))


@login_required
def entity_merge(request: HttpRequest, node_id: str) -> HttpResponse:
    """GET: pick the target (candidates of the same type), then the preview of what moves; POST applies."""
    access = web_access(request)
    target_id = request.POST.get("target") or request.GET.get("target") or ""
    if request.method == "POST":
        plan = perform(
            request, lambda: nodes.node_merge(access=access, source_id=node_id, target_id=target_id, apply=True)
        )
        if plan is None:
            return HttpResponseRedirect(f"{_url(node_id)}merge")  # the refusal is shown above the candidates
        moved = f"{plan.claims} claim{'s' if plan.claims != 1 else ''}"
        messages.success(request, f"Merged “{plan.source.label}” into “{plan.target.label}”: {moved} moved.")
        return HttpResponseRedirect(_url(plan.target))
    node = _entity(access, node_id)
    target = _merged_target(access, node)
    if target is not None:
        return HttpResponseRedirect(_url(target))
    if target_id:
        preview = perform(request, lambda: nodes.node_merge(access=access, source_id=node_id, target_id=target_id))
        if preview is not None:
            return render(request, "ui/entities/merge_preview.html", {"node": node, "plan": preview})
    words = request.GET.get("q", "").strip()[:300] or None
    page = perform(
        request,
        lambda: selectors.nodes_for_access(access, types=[node.type], label=words, limit=CANDIDATES + 1),
    )
    candidates = [other for other in (page[0] if page else []) if other.pk != node.pk][:CANDIDATES]
    context = {"node": node, "candidates": candidates, "q": words or "", "type_word": TYPE_WORDS.get(node.type, "")}
    return render(request, "ui/entities/merge.html", context)


@login_required
def entity_delete(request: HttpRequest, node_id: str) -> HttpResponse:
    """GET asks for confirmation and says what goes; POST erases."""
    access = web_access(request)
    if request.method == "POST":
        erased = perform(request, lambda: nodes.node_delete(access=access, node_id=node_id))
        if erased is None:
            return HttpResponseRedirect(_url(node_id))
        messages.success(request, f"Deleted, with {erased} claim{'s' if erased != 1 else ''} about it.")
        return HttpResponseRedirect("/ui/entities/")
    doomed = perform(request, lambda: nodes.node_delete_preview(access=access, node_id=node_id))
    if doomed is None:
        return HttpResponseRedirect(_url(node_id))
    return render(request, "ui/entities/delete.html", {"node": doomed.node, "doomed": doomed})

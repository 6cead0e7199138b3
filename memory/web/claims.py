"""/ui/claims/: the claims with filters and keyset paging (the selector of /claim/list), one claim with its
evidence and revision history, and its lifecycle actions through memory.services.claims."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_POST

from memory import selectors
from memory.access import Access
from memory.claim_history import claim_happenings
from memory.models import Claim, ClaimKind, ClaimOrigin, ClaimStatus
from memory.services import claims
from memory.services.review import review_undo
from memory.web.access import web_access
from memory.web.actions import back, found, perform

PAGE_SIZE = 25
_YES_NO = {"yes": True, "no": False}

# One form each: the service it calls and what the person is told when it worked.
ACTIONS: dict[str, tuple[Callable[..., Claim], str]] = {
    "pin": (claims.claim_pin, "Pinned: it is kept and ranks higher."),
    "unpin": (claims.claim_unpin, "Unpinned."),
    "expire": (claims.claim_expire, "Expired: no longer current, kept in history."),
    "retract": (claims.claim_retract, "Retracted: marked as never true, kept in history."),
    "confirm": (claims.claim_confirm, "Confirmed."),
    "undo-review": (review_undo, "Took the review decision back: the claim waits for review again."),
}


def _chosen(request: HttpRequest, name: str, allowed: list[str]) -> list[str]:
    return [value for value in request.GET.getlist(name) if value in allowed]


@login_required
def claim_list(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    partitions = [p.key for p in access.read_partitions]
    filters: dict[str, Any] = {
        "statuses": _chosen(request, "status", ClaimStatus.values),
        "kinds": _chosen(request, "kind", ClaimKind.values),
        "origins": _chosen(request, "origin", ClaimOrigin.values),
        "partition_keys": _chosen(request, "partition", partitions),
        "pinned": _YES_NO.get(request.GET.get("pinned", "")),
        "needs_reverification": _YES_NO.get(request.GET.get("reverify", "")),
        "text": request.GET.get("text", "").strip()[:500] or None,
    }
    cursor = request.GET.get("cursor") or None
    page = perform(request, lambda: selectors.claims_for_access(access, **filters, cursor=cursor, limit=PAGE_SIZE))
    query = request.GET.copy()
    query.pop("cursor", None)
    context = {
        "claims": page.claims if page else [],
        "next_cursor": page.next_cursor if page else None,
        "paged": bool(cursor),
        "filter_query": query.urlencode(),
        "filters": filters,
        "statuses": ClaimStatus.choices,
        "kinds": ClaimKind.choices,
        "origins": ClaimOrigin.choices,
        "partitions": partitions,
        "pinned": request.GET.get("pinned", ""),
        "reverify": request.GET.get("reverify", ""),
    }
    return render(request, "ui/claims/list.html", context)


def _claim(access: Access, claim_id: str) -> Claim:
    return found(lambda: selectors.claim_for_access(access, claim_id))


@login_required
def claim_detail(request: HttpRequest, claim_id: str) -> HttpResponse:
    access = web_access(request)
    claim = _claim(access, claim_id)
    revisions = selectors.claim_revisions(claim)
    value, value_block = _value_text(claim.object_value)
    context = {
        "claim": claim,
        "value": value,
        "value_block": value_block,
        "evidence": claim.evidence.select_related("source").order_by("authored_at", "id"),
        "revisions": revisions,
        "happenings": claim_happenings(access, revisions),
    }
    return render(request, "ui/claims/detail.html", context)


def _value_text(value: Any) -> tuple[str, bool]:
    """A claim's value as a person reads it, and whether it needs a block: flat pairs and lists on one line
    ("topic: coffee · replaces: no"), nested structure as indented JSON."""
    if isinstance(value, dict) and all(_flat(item) for item in value.values()):
        return " \u00b7 ".join(f"{key}: {_word(item)}" for key, item in sorted(value.items())), False
    if isinstance(value, list) and all(_flat(item) for item in value):
        return ", ".join(_word(item) for item in value), False
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True), True
    return ("" if value is None else _word(value)), False


def _flat(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _word(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "none"}[value]
    return str(value)


@login_required
@require_POST
def claim_action(request: HttpRequest, claim_id: str, action: str) -> HttpResponse:
    if action not in ACTIONS:
        raise Http404("No such action.")
    service, done = ACTIONS[action]
    access = web_access(request)
    perform(request, lambda: service(access=access, claim_id=claim_id), done=done)
    return back(request, f"/ui/claims/{claim_id}/")


@login_required
@require_POST
def claim_correct(request: HttpRequest, claim_id: str) -> HttpResponse:
    access = web_access(request)
    statement = request.POST.get("statement", "")
    corrected = perform(
        request,
        lambda: claims.claim_correct(access=access, claim_id=claim_id, statement=statement),
        done="Corrected. The old text is kept in the history.",
    )
    return HttpResponseRedirect(f"/ui/claims/{corrected.pk if corrected else claim_id}/")


@login_required
def claim_erase(request: HttpRequest, claim_id: str) -> HttpResponse:
    """GET asks for confirmation and lists what goes; POST erases."""
    access = web_access(request)
    if request.method == "POST":
        erased = perform(request, lambda: claims.claim_erase(access=access, claim_id=claim_id))
        if erased is None:
            return HttpResponseRedirect(f"/ui/claims/{claim_id}/")
        noun = "claim" if erased == 1 else "claims"
        messages.success(request, f"Erased {erased} {noun}, with their evidence links.")
        return HttpResponseRedirect("/ui/claims/")
    claim = _claim(access, claim_id)
    doomed = found(lambda: claims.claim_erase_preview(access=access, claim_id=claim_id))
    return render(request, "ui/claims/erase.html", {"claim": claim, "doomed": doomed})

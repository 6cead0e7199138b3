"""/ui/maintenance/: the upkeep of one's own memory. Each cleanup is a preview with a reason per item, then an
apply that takes back exactly what was previewed (stale nodes, orphan nodes) or re-runs the same rule (duplicate
merge, reaping, statusless recovery); vector status with a reindex that advances one batch per request; the
export download; and the erasure of a partition, typed to confirm. Every step is a service of the maintenance
app, commitments or memory.services (docs/architecture.md, "Maintenance and data rights").

The signed-in person acts as the owner: `web_access` carries every scope (maintenance and edit included), the
same as a token with all scopes, over the partition chosen in the header (or all of them).
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from commitments.services import recover_statusless
from maintenance.dedup import dedup_sweep
from maintenance.orphans import prune_orphans_apply, prune_orphans_preview
from maintenance.pruning import MAX_IDLE_DAYS, MAX_PAGE, Thresholds, prune_stale_apply, prune_stale_preview
from maintenance.reaping import reap
from maintenance.scoring import AGGRESSIVENESS, min_score_for
from maintenance.vectors import memory_reindex, memory_vectors_status
from memory import selectors
from memory.access import Access
from memory.api.streaming import streamed
from memory.errors import ServiceError
from memory.models import Scope
from memory.services.account_erasure import partition_erase
from memory.services.export import ARCHIVE_MIME_TYPE, export_prepare, export_scope
from memory.web.access import web_access
from memory.web.actions import explain, found, perform

PREVIEW_SIZE = 100  # nodes listed per preview page (the apply takes these back)
REAP_SAMPLE = 20
REINDEX_STEP = 200  # rows re-embedded per request: one request, one step of the progress bar
KIND_WORDS = {"sessionEvents": "session events", "operations": "processing receipts", "scratchpad": "scratchpad notes"}


def _home() -> str:
    return reverse("ui:maintenance-home")


def _in_view(access: Access) -> str:
    """What the tools work on, in words: the partition in the header, or all of them."""
    if access.workspace:
        return "all your partitions"
    return access.partition.label or access.partition.key if access.partition else "your personal partition"


@login_required
@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    context = {
        "in_view": _in_view(access),
        "vectors": perform(request, lambda: memory_vectors_status(access=access)),
        "partitions": list(selectors.partitions_for_access(access)),
    }
    return render(request, "ui/maintenance/overview.html", context)


# --- stale nodes -------------------------------------------------------------------------------------------


class StaleForm(forms.Form):
    # The labels are the page's: an error names the field as the person sees it.
    aggressiveness = forms.ChoiceField(
        choices=[(name, name) for name in AGGRESSIVENESS], initial="medium", label="How much to prune"
    )
    minIdleDays = forms.IntegerField(min_value=0, max_value=MAX_IDLE_DAYS, initial=30, label="Idle at least (days)")
    includeReference = forms.BooleanField(required=False, label="Include reference material")
    cursor = forms.CharField(required=False, max_length=1000)

    def thresholds(self) -> Thresholds:
        data = self.cleaned_data
        return Thresholds(
            min_score=min_score_for(data["aggressiveness"]),
            min_idle_days=data["minIdleDays"],
            include_reference=data["includeReference"],
        )


def _form_errors(form: forms.Form) -> str:
    return " ".join(  # each of Django's messages ends its sentence
        f"{form[name].label if name in form.fields else name}: {' '.join(map(str, problems))}"
        for name, problems in form.errors.items()
    )


def _stale_form(data: Any) -> StaleForm:
    # Unsubmitted, the page previews with the defaults: the medium floor, 30 idle days, no reference nodes.
    return StaleForm(data if "aggressiveness" in data else {"aggressiveness": "medium", "minIdleDays": 30})


@login_required
@require_http_methods(["GET", "POST"])
def stale(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    form = _stale_form(request.POST if request.method == "POST" else request.GET)
    context: dict[str, Any] = {
        "form": form, "in_view": _in_view(access), "levels": list(AGGRESSIVENESS), "max_idle_days": MAX_IDLE_DAYS,
    }  # fmt: skip
    if not form.is_valid():
        messages.error(request, f"Check the settings: {_form_errors(form)}")
        return render(request, "ui/maintenance/stale.html", context)
    thresholds = form.thresholds()
    context["thresholds"] = thresholds
    if request.method == "POST":
        ids = request.POST.getlist("node")[:MAX_PAGE]
        context["applied"] = perform(
            request, lambda: prune_stale_apply(access=access, node_ids=ids, thresholds=thresholds)
        )
        context["labels"] = _labels(request)
        return render(request, "ui/maintenance/stale.html", context)
    cursor = form.cleaned_data["cursor"] or None
    context["preview"] = perform(
        request,
        lambda: prune_stale_preview(access=access, thresholds=thresholds, limit=PREVIEW_SIZE, cursor=cursor),
    )
    query = request.GET.copy()
    query.pop("cursor", None)
    context["query"] = query.urlencode()
    return render(request, "ui/maintenance/stale.html", context)


def _labels(request: HttpRequest) -> dict[str, str]:
    """The names the preview showed, sent back with the ids so the result can say which nodes went (display
    only: what is deleted is decided by the service from the ids)."""
    return dict(zip(request.POST.getlist("node_id"), request.POST.getlist("node_label"), strict=False))


# --- orphans, duplicates, reaping, recovery ----------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def orphans(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    context: dict[str, Any] = {"in_view": _in_view(access)}
    if request.method == "POST":
        ids = request.POST.getlist("node")[:MAX_PAGE]
        context["applied"] = perform(request, lambda: prune_orphans_apply(access=access, node_ids=ids))
        context["labels"] = _labels(request)
    else:
        context["preview"] = perform(request, lambda: prune_orphans_preview(access=access, limit=PREVIEW_SIZE))
    return render(request, "ui/maintenance/orphans.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def duplicates(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    applying = request.method == "POST"
    result = perform(request, lambda: dedup_sweep(access=access, dry_run=not applying))
    context = {"in_view": _in_view(access), "result": result, "applied": applying}
    return render(request, "ui/maintenance/duplicates.html", context)


def _reap(access: Access, *, apply: bool, limit: int | None) -> Any:
    access.require_scope(Scope.MAINTENANCE if apply else Scope.READ)
    return reap(owner_id=access.user.pk, partition_ids=access.read_partition_ids, apply=apply, limit=limit,
                sample=REAP_SAMPLE)  # fmt: skip


@login_required
@require_http_methods(["GET", "POST"])
def reaping(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    applying = request.method == "POST"
    # Apply reaps at most as many as the preview counted, longest unread first (the preview's order).
    limit = _bounded(request.POST.get("limit"), 1, 100_000) if applying else None
    result = perform(request, lambda: _reap(access, apply=applying, limit=limit))
    context = {
        "in_view": _in_view(access), "result": result, "applied": applying,
        "after_days": settings.REAP_AFTER_DAYS, "max_importance": settings.REAP_MAX_IMPORTANCE,
    }  # fmt: skip
    return render(request, "ui/maintenance/reaping.html", context)


def _bounded(value: str | None, low: int, high: int) -> int:
    try:
        return min(high, max(low, int(value or high)))
    except ValueError:
        return low


@login_required
@require_http_methods(["GET", "POST"])
def recovery(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    applying = request.method == "POST"
    result = perform(request, lambda: recover_statusless(access, dry_run=not applying))
    context = {"in_view": _in_view(access), "result": result, "applied": applying}
    return render(request, "ui/maintenance/recovery.html", context)


# --- vectors ------------------------------------------------------------------------------------------------


@login_required
@require_POST
def reindex(request: HttpRequest) -> HttpResponse:
    """One step: re-embed at most REINDEX_STEP stale rows and answer the embeddings card with the progress bar.
    While rows remain, the card asks for the next step itself (htmx, on load); `start` (the stale count when
    the run began) carries the bar's 100 %. Without script, each press is one step."""
    access = web_access(request)
    problem = ""
    try:
        step = memory_reindex(access=access, limit=REINDEX_STEP)
    except ServiceError as error:
        step, problem = None, explain(error)
    remaining = step.total_remaining if step else 0
    start = max(_bounded(request.POST.get("start"), 0, 10**9) if request.POST.get("start") else 0,
                remaining + (step.total_embedded if step else 0))  # fmt: skip
    done = start - remaining
    if not request.headers.get("HX-Request"):
        if problem:
            messages.error(request, problem)
        else:
            messages.success(request, f"Re-embedded {done} of {start}; {remaining} to go.")
        return HttpResponseRedirect(_home() + "#embeddings")
    progress = {"start": start, "done": done, "remaining": remaining,
                "percent": 100 if start == 0 else done * 100 // start, "problem": problem}  # fmt: skip
    context = {"vectors": perform(request, lambda: memory_vectors_status(access=access)), "progress": progress}
    return render(request, "ui/maintenance/_embeddings.html", context)


# --- data rights --------------------------------------------------------------------------------------------


@login_required
@require_POST
def export(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The archive of the memory (or of one partition), streamed as the REST export streams it."""
    access = web_access(request)
    partition = request.POST.get("partition") or None

    def prepare() -> Any:
        access.require_scope(Scope.MAINTENANCE)
        return export_prepare(owner=access.user, partition_keys=export_scope(access, partition), actor=access.actor)

    prepared = perform(request, prepare)
    if prepared is None:
        return HttpResponseRedirect(_home() + "#export")
    response = StreamingHttpResponse(streamed(request, prepared.stream()), content_type=ARCHIVE_MIME_TYPE)
    filename = re.sub(r"[^A-Za-z0-9._-]", "_", prepared.filename)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def erase(request: HttpRequest) -> HttpResponse:
    """GET: what erasing the partition takes (a 404 for a key that is not the person's). POST: erase it, only
    when its key is typed again."""
    access = web_access(request)
    key = (request.POST.get("partition") if request.method == "POST" else request.GET.get("partition")) or ""
    preview = found(lambda: partition_erase(access=access, key=key, dry_run=True))
    if request.method == "POST":
        if request.POST.get("confirm", "").strip() != key:
            messages.error(request, f"Nothing was erased: type {key} exactly to confirm.")
        else:
            erased = perform(request, lambda: partition_erase(access=access, key=key, dry_run=False))
            if erased is not None:
                kept = " It stays, empty." if erased.kept_empty else ""
                messages.success(request, f"Erased {key}: {sum(erased.counts.values())} items.{kept}")
                return HttpResponseRedirect(_home())
    counts = [(KIND_WORDS.get(kind, kind), number) for kind, number in preview.counts.items() if number]
    return render(request, "ui/maintenance/erase.html", {"preview": preview, "counts": counts, "key": key})

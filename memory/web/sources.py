"""`/ui/sources/`: the sources list, one source (its messages or converted text, original file, operations,
derived claims), upload, retry and delete. Each view calls the same service or selector as REST."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_POST

from memory import dashboard, selectors
from memory.access import access_for_user
from memory.api.ranges import blob_response
from memory.models import ChangeSurface, OperationStatus, SourceKind, SourceScope
from memory.pipeline.steps import PIPELINE
from memory.services import ingestion
from memory.services.artifacts import clean_mime_type
from memory.services.blobs import SpooledUpload
from memory.services.erasure import source_erase
from memory.services.operations import operation_retry
from memory.web.access import narrowed_access, web_access
from memory.web.actions import back, found, perform

STEPS = [step.name for step in PIPELINE]
KINDS = [kind for kind in SourceKind.values if kind != SourceKind.MESSAGE]


@login_required
def source_list(request: HttpRequest) -> HttpResponse:
    access = web_access(request)
    kind = request.GET.get("kind") or None
    scope = request.GET.get("scope") or None
    status = request.GET.get("status") or None
    partitions = list(access.read_partitions)
    access, partition = narrowed_access(request, access)
    page = perform(
        request,
        lambda: selectors.sources_for_access(
            access,
            kind=kind if kind in SourceKind.values else None,
            scope=scope if scope in SourceScope.values else None,
            status=status if status in OperationStatus.values else None,
            cursor=request.GET.get("cursor") or None,
            limit=25,
        ),
    )
    query = request.GET.copy()
    query.pop("cursor", None)
    return render(
        request,
        "ui/sources/list.html",
        {
            "page": page,
            "kinds": KINDS,
            "scopes": SourceScope.choices,
            "kind": kind or "",
            "partitions": partitions,
            "partition": partition,
            "scope": scope or "",
            "statuses": OperationStatus.values,
            "status": status or "",
            "filters": query.urlencode(),
        },
    )


@login_required
def source_detail(request: HttpRequest, source_id: str) -> HttpResponseBase:
    access = web_access(request)
    source = found(lambda: selectors.source_for_access(access, source_id))
    if source.kind == SourceKind.MESSAGE and source.parent_id and source.message_id:
        # A message is read in its conversation, at its place: every "where it was said" link lands there.
        return HttpResponseRedirect(f"/ui/sources/{source.parent_id}/#message-{source.message_id}")
    operations = dashboard.source_operations(access, source)
    for operation in operations:
        operation.done_names = [str(done.get("step")) for done in operation.steps_done]  # type: ignore[attr-defined]
    claims = dashboard.source_claims(access, source)
    return render(
        request,
        "ui/sources/detail.html",
        {
            "source": source,
            "messages_": dashboard.source_messages(source) if source.kind == SourceKind.CONVERSATION else [],
            "operations": operations,
            "claims": claims,
            "steps": STEPS,
        },
    )


@login_required
def source_original(request: HttpRequest, source_id: str) -> HttpResponseBase:
    """The original file, streamed by the artifact service's response (Range supported), after the same
    access checks as /artifact/<sha256>."""
    access = web_access(request)
    source = found(lambda: selectors.source_for_access(access, source_id))
    if source.blob is None:
        raise Http404("This source has no original file.")
    response = blob_response(request, found(lambda: selectors.blob_for_access(access, source.blob.sha256)))  # type: ignore[union-attr]
    if source.filename:
        response["Content-Disposition"] = f'attachment; filename="{_safe_name(source.filename)}"'
    return response


def _safe_name(name: str) -> str:
    return "".join(ch for ch in name if ch.isprintable() and ch not in '"\\/') or "original"


@login_required
@require_POST
def source_retry(request: HttpRequest, source_id: str) -> HttpResponse:
    access = web_access(request)
    operation_id = request.POST.get("operation", "")
    perform(request, lambda: operation_retry(access=access, operation_id=operation_id), done="Queued again.")
    return back(request, f"/ui/sources/{source_id}/")


@login_required
@require_POST
def source_delete(request: HttpRequest, source_id: str) -> HttpResponse:
    access = web_access(request)
    erased = perform(request, lambda: source_erase(access=access, source_id=source_id), done="")
    if erased is None:
        return back(request, f"/ui/sources/{source_id}/")
    messages.success(
        request, f"Erased the source ({erased.sources} sources, {erased.blobs} files) and what it produced."
    )
    return HttpResponseRedirect("/ui/sources/")


@login_required
def source_upload(request: HttpRequest) -> HttpResponse:
    """GET: the form. POST: the file through ingest_file (as /ingest/file), then the receipt, live."""
    user = request.user
    owner_access = access_for_user(user=user, surface=ChangeSurface.UI)  # type: ignore[arg-type]
    partitions = list(selectors.partitions_for_access(owner_access, active_only=True))
    receipt = None
    if request.method == "POST":
        upload = request.FILES.get("file")
        scope = request.POST.get("scope", SourceScope.PERSONAL)
        key = request.POST.get("partition", "")

        def ingest() -> ingestion.Receipt:
            access = access_for_user(user=user, partition_key=key or None, surface=ChangeSurface.UI)  # type: ignore[arg-type]
            spooled = SpooledUpload(upload.chunks()) if upload is not None else None
            try:
                return ingestion.ingest_upload(
                    access=access, upload=spooled, filename=upload.name or "" if upload else "",
                    mime_type=clean_mime_type(upload.content_type or "") if upload else "", scope=scope,
                )  # fmt: skip
            finally:
                if spooled is not None:
                    spooled.close()

        receipt = perform(request, ingest, done="Uploaded. Processing follows below.")
    return render(
        request,
        "ui/sources/upload.html",
        {"partitions": partitions, "scopes": SourceScope.choices, "receipt": receipt, "steps": STEPS},
    )

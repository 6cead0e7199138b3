"""The person's own access tokens (SPEC §10): list, create, rotate, revoke.

A new secret is rendered straight into the POST's answer (no redirect, nothing in the session, no-store), so a
reload or a later visit can never show it again.
"""

from __future__ import annotations

import secrets
from datetime import date, datetime, time
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from memory import selectors
from memory.access import Actor, access_for_user
from memory.models import ChangeSurface, Scope, ToolProfile
from memory.services.tokens import IssuedToken, token_issue_own, token_revoke, token_rotate
from memory.web.actions import found, perform


def _access(request: HttpRequest) -> Any:
    # Tokens belong to the person, not to a partition: the header's partition choice does not narrow them.
    return access_for_user(user=request.user, surface=ChangeSurface.UI)  # type: ignore[arg-type]


def _actor(request: HttpRequest) -> Actor:
    return Actor.person(request.user, surface=ChangeSurface.UI)  # type: ignore[arg-type]


def _page(request: HttpRequest, form: dict[str, Any] | None = None, status: int = 200) -> HttpResponse:
    access = _access(request)
    context = {
        "tokens": selectors.tokens_for_user(access),
        "partitions": selectors.partitions_for_access(access, active_only=True),
        "scopes": Scope.choices,
        "profiles": ToolProfile.choices,
        "form": form or {"scopes": [Scope.READ, Scope.WRITE], "profile": ToolProfile.ASSISTANT},
        "today": timezone.localdate(),
        "once": secrets.token_urlsafe(16),
    }
    return render(request, "ui/tokens/list.html", context, status=status)


SENT_KEY = "ui.tokens.sent"


def _sent_before(request: HttpRequest, once: str) -> bool:
    """Whether this form was sent already: a reload of the secret page re-sends the POST, and must neither
    mint a second token nor show any secret. Only the form's random id is kept, never a secret."""
    sent = list(request.session.get(SENT_KEY, []))
    if not once or once in sent:
        return True
    request.session[SENT_KEY] = [*sent[-19:], once]
    return False


def _expiry(value: str) -> datetime | str | None:
    """The end of the chosen day; an unreadable date is returned as the message to show."""
    if not value:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        return f"“{value}” is not a date (use YYYY-MM-DD)."
    return timezone.make_aware(datetime.combine(day, time(23, 59, 59)))


def _secret_page(request: HttpRequest, issued: IssuedToken, *, rotated: bool) -> HttpResponse:
    base = f"{request.scheme}://{request.get_host()}"
    response = render(
        request,
        "ui/tokens/secret.html",
        {"issued": issued, "token": issued.token, "secret": issued.secret, "rotated": rotated,
         "mcp_url": f"{base}/mcp", "sse_url": f"{base}/sse"},
    )  # fmt: skip
    response["Cache-Control"] = "no-store"
    return response


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _page(request)
    form: dict[str, Any] = {
        "label": request.POST.get("label", ""),
        "scopes": request.POST.getlist("scopes"),
        "partitions": request.POST.getlist("partitions"),
        "profile": request.POST.get("profile", ToolProfile.ASSISTANT),
        "expires": request.POST.get("expires", ""),
        "allow_query_token": bool(request.POST.get("allow_query_token")),
    }
    if _sent_before(request, request.POST.get("once", "")):
        messages.info(
            request, "That form was sent already; a secret is shown only once. Rotate the token for a new one."
        )
        return redirect("ui:tokens")
    expires = _expiry(form["expires"])
    if isinstance(expires, str):
        messages.error(request, expires)
        return _page(request, form, status=400)
    issued = perform(
        request,
        lambda: token_issue_own(
            actor=_actor(request),
            owner=request.user,  # type: ignore[arg-type]
            label=form["label"],
            scopes=form["scopes"],
            profile=form["profile"],
            partition_keys=form["partitions"],
            allow_query_token=form["allow_query_token"],
            expires_at=expires,
        ),
    )
    if issued is None:
        return _page(request, form, status=400)
    return _secret_page(request, issued, rotated=False)


@login_required
@never_cache
@require_POST
def rotate(request: HttpRequest, token_id: str) -> HttpResponse:
    token = found(lambda: selectors.token_of_person(_access(request), token_id))
    issued = perform(request, lambda: token_rotate(actor=_actor(request), token=token))
    if issued is None:
        return redirect("ui:tokens")
    return _secret_page(request, issued, rotated=True)


@login_required
@require_http_methods(["GET", "POST"])
def revoke(request: HttpRequest, token_id: str) -> HttpResponse:
    token = found(lambda: selectors.token_of_person(_access(request), token_id))
    if request.method == "GET":
        return render(request, "ui/tokens/revoke.html", {"token": token})
    perform(
        request,
        lambda: token_revoke(actor=_actor(request), token=token),
        done=f"Revoked “{token.label}”. Clients using it are refused from now on.",
    )
    return redirect("ui:tokens")

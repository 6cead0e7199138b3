"""How web views call services: a service's refusal becomes a message with its remedy (never a 500), an
object out of reach is a 404, and a POST goes back where it came from."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme

from memory.errors import ERROR_KINDS, NotFound, ServiceError

T = TypeVar("T")


def found(lookup: Callable[[], T]) -> T:
    """The object a selector or service returns; not found (another person's, or erased) is a 404."""
    try:
        return lookup()
    except NotFound as error:
        raise Http404(str(error)) from error


def perform(request: HttpRequest, action: Callable[[], T], *, done: str = "") -> T | None:
    """Run one service call for a form. Success adds `done` as a message; a refusal adds the service's
    message and remedy and returns None; not found is a 404."""
    try:
        result = found(action)
    except ServiceError as error:
        messages.error(request, explain(error))
        return None
    if done:
        messages.success(request, done)
    return result


def explain(error: ServiceError) -> str:
    """The message a person reads: what went wrong, the fields at fault, and what to do."""
    fields = "; ".join(
        f"{field}: {' '.join(map(str, problems)) if isinstance(problems, list) else problems}"
        for field, problems in error.details.items()
    ) if error.code == "VALIDATION_ERROR" else ""  # fmt: skip
    parts = (error.message, f"({fields})" if fields else "", ERROR_KINDS[error.code].remedy)
    return " ".join(part for part in parts if part)


def back(request: HttpRequest, fallback: str) -> HttpResponseRedirect:
    """Redirect to the form's `next` (same site only), else to `fallback`."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    hosts = {request.get_host()}
    safe = url_has_allowed_host_and_scheme(target, allowed_hosts=hosts, require_https=request.is_secure())
    return HttpResponseRedirect(target if safe else fallback)

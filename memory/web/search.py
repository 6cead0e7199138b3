"""/ui/search: the same search as /query/search, each result with why it ranked (legs and boosts), its evidence
linked to its source, and its partition. Reference material is its own scope (never mixed into personal
results, SPEC §8): the toggle adds the /query/reference results as a second list."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memory.models import SourceScope
from memory.recall.search import SearchRequest, search
from memory.web.access import web_access
from memory.web.actions import perform

MAX_QUERY = 4000  # as /query/search
LIMIT = 10


def _found(request: HttpRequest, query: str, scope: str) -> list[dict[str, Any]]:
    access = web_access(request)
    results = perform(request, lambda: search(access, SearchRequest(query=query, scope=scope, limit=LIMIT)))
    return [result.as_json() for result in results or []]


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:MAX_QUERY]
    with_reference = request.GET.get("reference") == "1"
    context: dict[str, Any] = {"query": query, "with_reference": with_reference}
    if query:
        context["results"] = _found(request, query, SourceScope.PERSONAL)
        if with_reference:
            context["reference"] = _found(request, query, SourceScope.REFERENCE)
    return render(request, "ui/search/search.html", context)

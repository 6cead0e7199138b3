"""The web UI (SPEC §10). For now: the home page listing the person's partitions and tokens."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memory import selectors
from memory.access import access_for_user


@login_required
def home(request: HttpRequest) -> HttpResponse:
    access = access_for_user(user=request.user)  # type: ignore[arg-type]
    return render(
        request,
        "ui/home.html",
        {
            "partitions": selectors.partitions_for_access(access),
            "tokens": selectors.tokens_for_user(access),
        },
    )

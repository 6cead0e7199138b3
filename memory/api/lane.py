"""The fast lane: the hot read calls (`/query/search`, `/query/reference`, `/recall`) answered without Django's
middleware chain, URL resolver and DRF's view machinery, by the same services, parser, serializer and renderer.

Around a search those cost 0.7-1.0 ms of the request's thread in process, more when served (docs/benchmarks.md,
thirty-second pass), for a call that needs none of them: a bearer token, a JSON body, a JSON answer, no cookie.
`config.handler.OneHopHandler` makes the request as always and asks the lane first. The lane answers an ordinary
call only, and hands every other one to Django's path as it came:

- before it has done anything a second attempt would repeat (the route, the headers, the host, the body and its
  fields), with nothing learned: Django's path answers as it always did, every error included;
- once the token is checked and the call counted in its rate window, with what it learned (memory.api.handover):
  Django's path takes the token and the verdict from there, so nothing is counted twice. A refused rate, an Access
  that cannot be built (an unknown userId, a partition out of reach) or a failed service call are answered there in
  the one error shape, with the reconnect and the outage handling of every endpoint. The lane takes read calls only
  (memory.connectivity.READ_TOOLS), which may run twice.

So the lane answers 200 only, and every refusal has one path. Its answer goes through the middleware that acts on
an API call (SecurityMiddleware, CommonMiddleware, XFrameOptionsMiddleware: their own process_request and
process_response); the rest of the chain does nothing for a request without a cookie whose view reads neither
the session nor the user. The lane is off when the chain is not the one it was checked against
(`CHECKED_MIDDLEWARE`), and takes an endpoint only under the DRF policy it reproduces (`_reproducible`).
tests/memory/test_fast_lane.py compares its answers with Django's, header by header. REST_FAST_LANE=false turns it
off.
"""

from __future__ import annotations

import io
import logging
import time
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer

from memory.access import WORKSPACE_HEADER
from memory.api.authentication import BearerTokenAuthentication
from memory.api.base import Endpoint, rest_access, rest_call_record
from memory.api.handover import LaneCall, hand_over
from memory.api.parsers import LimitedJSONParser
from memory.api.throttling import TokenRateThrottle, rate_verdict
from memory.connectivity import READ_TOOLS, is_unavailable, note_outage, outage_noted
from memory.credentials import bearer_secret
from memory.services.tokens import token_call_for_secret, token_touch

logger = logging.getLogger("memory.api")

# The chain whose effect on an API call the lane reproduces; with any other, Django's path answers every call.
CHECKED_MIDDLEWARE = (
    "memory.connectivity.DatabaseOutageMiddleware",  # the lane takes no call while an outage is noted
    "django.middleware.security.SecurityMiddleware",  # run by the lane
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files only
    "django.contrib.sessions.middleware.SessionMiddleware",  # nothing without a cookie and a session read
    "django.middleware.common.CommonMiddleware",  # run by the lane
    "django.middleware.csrf.CsrfViewMiddleware",  # the API's views are exempt; no cookie to renew
    "django.contrib.auth.middleware.AuthenticationMiddleware",  # a lazy user nobody reads
    "django.contrib.messages.middleware.MessageMiddleware",  # no message without a session
    "django.middleware.clickjacking.XFrameOptionsMiddleware",  # run by the lane
    "allauth.account.middleware.AccountMiddleware",  # acts on a 404 only
)
JSON_RANGES = frozenset({"*/*", "application/*", "application/json"})


class FastLane:
    def __init__(self) -> None:
        self._routes: dict[str, type[Endpoint]] | None = None
        self._security = SecurityMiddleware(_never_called)
        self._common = CommonMiddleware(_never_called)
        self._frames = XFrameOptionsMiddleware(_never_called)
        self._parser = LimitedJSONParser()
        self._renderer = JSONRenderer()

    def routes(self) -> dict[str, type[Endpoint]]:
        """Each path the lane answers (path_info), and its endpoint: from the URL configuration, on first use."""
        if self._routes is None:
            self._routes = lane_routes() if tuple(settings.MIDDLEWARE) == CHECKED_MIDDLEWARE else {}
            if not self._routes:
                logger.warning("api.fast_lane_off", extra={"reason": "no endpoint, or another middleware chain"})
        return self._routes

    def answer(self, request: HttpRequest) -> HttpResponse | None:
        """The answer to an ordinary call of a lane endpoint; None hands the call to Django's path."""
        endpoint = self.routes().get(request.path_info) if request.method == "POST" else None
        if endpoint is None or not self._ordinary(request):
            return None
        started = time.perf_counter()
        try:
            data = endpoint.validated(self._parsed(request))
            token, counted = token_call_for_secret(
                bearer_secret(request.META["HTTP_AUTHORIZATION"]), via_query=False, count_call=True
            )
        except Exception as exc:  # a refusal is Django's path's to answer; nothing was counted for a usable token
            _noted(exc)
            return None
        try:
            token_touch(token)
            call = LaneCall(token=token, verdict=rate_verdict(token, counted), started=started)
        except Exception as exc:
            _failed(request, LaneCall(token=token, verdict=counted, started=started), exc)
            return None
        if call.verdict is not None and not call.verdict.allowed:
            hand_over(request, call)
            return None
        view = endpoint()
        try:
            access = rest_access(token, data, request.META.get(_WORKSPACE_META))
            result = view.handle(access, data)
        except Exception as exc:
            _failed(request, call, exc)
            return None
        response = HttpResponse(
            self._renderer.render(endpoint.answer_of(result)),
            content_type=self._renderer.media_type,
            status=endpoint.success_status,
        )
        for name, value in view.default_response_headers.items():
            response[name] = value
        # Innermost first, as the chain runs them; each sets its headers on this response and returns it.
        self._frames.process_response(request, response)
        self._common.process_response(request, response)
        self._security.process_response(request, response)
        rest_call_record(
            tool=endpoint.tool,
            token=token,
            access=access,
            status=response.status_code,
            error_code="",
            started=started,
            request=request,
            response_bytes=len(response.content),
        )
        return response

    def _ordinary(self, request: HttpRequest) -> bool:
        """A call the lane answers as Django's path would: a bearer token, a JSON body of a declared length, an
        answer in plain JSON, no cookie, no query string, a valid host, no redirect, no outage."""
        meta = request.META
        if meta.get("QUERY_STRING") or meta.get("HTTP_COOKIE") or "HTTP_TRANSFER_ENCODING" in meta:
            return False
        if meta.get("CONTENT_TYPE", "").partition(";")[0].strip().lower() != "application/json":
            return False
        if not meta.get("CONTENT_LENGTH", "").isdigit() or int(meta["CONTENT_LENGTH"]) == 0:
            return False
        if not bearer_secret(meta.get("HTTP_AUTHORIZATION", "")) or not _accepts_plain_json(meta.get("HTTP_ACCEPT")):
            return False
        if outage_noted():
            return False
        try:  # an SSL redirect, a disallowed user agent or host, a missing slash: Django's path answers those
            return self._security.process_request(request) is None and self._common.process_request(request) is None
        except Exception:
            return False

    def _parsed(self, request: HttpRequest) -> Any:
        """The JSON body, through the API's parser under DRF's encoding rule (ParseError, ValidationError, ...)."""
        context = {"request": request, "encoding": request.encoding or settings.DEFAULT_CHARSET}
        return self._parser.parse(io.BytesIO(request.body), "application/json", context)


def _failed(request: HttpRequest, call: LaneCall, exc: Exception) -> None:
    """Django's path answers a failure after the token's check: it runs the call again, with the token and the
    verdict the lane had."""
    hand_over(request, call)
    _noted(exc)


def _noted(exc: Exception) -> None:
    """A database that is away is noted before Django's path takes the call, so that it answers 503 at once
    instead of waiting on the connection pool a second time."""
    if is_unavailable(exc):
        note_outage()


_WORKSPACE_META = "HTTP_" + WORKSPACE_HEADER.upper().replace("-", "_")


def _accepts_plain_json(accept: str | None) -> bool:
    """DRF's content negotiation would answer this Accept header in JSON without an indent (JSONRenderer is the
    API's only renderer; an absent header means */*)."""
    if accept is None:
        return True
    if "indent" in accept.lower():
        return False
    return any(part.partition(";")[0].strip().lower() in JSON_RANGES for part in accept.split(","))


def lane_routes() -> dict[str, type[Endpoint]]:
    """The URL configuration's plain routes (no converter) to endpoints that ask for the lane (`fast_lane`)."""
    routes: dict[str, type[Endpoint]] = {}

    def walk(patterns: list[Any], prefix: str) -> None:
        for entry in patterns:
            if not isinstance(entry.pattern, RoutePattern) or entry.pattern.converters:
                continue
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                kind = getattr(entry.callback, "cls", None)
                if isinstance(kind, type) and issubclass(kind, Endpoint) and kind.fast_lane:
                    if _reproducible(kind):
                        routes["/" + prefix + str(entry.pattern)] = kind
                    else:
                        logger.warning("api.fast_lane_skipped", extra={"tool": kind.tool})

    walk(get_resolver().url_patterns, "")
    return routes


def _reproducible(kind: type[Endpoint]) -> bool:
    """The endpoint answers under the policy the lane reproduces: a read call with a JSON body and answer, the
    bearer token, the rate window, the API's parser and renderer, no versioning."""
    return (
        kind.tool in READ_TOOLS
        and "post" in kind.http_method_names
        and not kind.answer_media_type
        and list(kind.authentication_classes) == [BearerTokenAuthentication]
        and list(kind.permission_classes) == [IsAuthenticated]
        and list(kind.throttle_classes) == [TokenRateThrottle]
        and list(kind.parser_classes) == [LimitedJSONParser]
        and list(kind.renderer_classes) == [JSONRenderer]
        and kind.versioning_class is None
    )


def _never_called(request: HttpRequest) -> HttpResponse:
    raise AssertionError("the lane runs the middleware's request and response halves only")

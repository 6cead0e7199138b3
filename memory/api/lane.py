"""The fast lane: the hot read calls (the searches, `/recall`, `/context/bootstrap`, `/memory/get`, `/memory/search`,
`/scratchpad/read`: endpoints that set `fast_lane`) answered without Django's middleware chain, URL resolver and DRF's
view machinery, by the same services, parser, serializer and renderer.

Around a search those cost 0.6-0.8 ms of the request's thread in process and a median 0.7 ms served (0.3-1.3 a
round; docs/benchmarks.md, thirty-second pass), for a call that needs none of them: a bearer token, a JSON body, a
JSON answer, no cookie. `config.handler.OneHopHandler` makes the request as always and asks the lane first. The lane
answers an ordinary call only, and hands every other one to Django's path:

- as it came, before the lane has done anything a second attempt would repeat (the route, the headers, the host,
  the body and its fields), or after a token was refused (a refused token this process held was counted in its
  window, to no effect: it cannot call): Django's path answers as it always did, every error included;
- with what the lane learned (memory.api.handover), once the token is checked and the call counted in its rate
  window: Django's path takes the token and the count from there, so nothing is counted twice. A refused rate is
  answered there; so is a failure of the token's check or touch, of the Access (an unknown userId, a partition out
  of reach), the service or the answer, raised there once as if Django's path had met it, with the reconnect and the
  outage handling of every endpoint. So is a call whose `handle` answered with a response of its own, or read what
  the lane's bare view lacks: Django's path runs it again (a read, counted once) and answers it. The lane takes read
  calls only (memory.connectivity.READ_TOOLS).

So the lane answers 200 only; Django's path answers every refusal and failure. Its answer goes through the middleware
that acts on an API call (SecurityMiddleware, CommonMiddleware, XFrameOptionsMiddleware: their own process_request
and process_response); the rest of the chain does nothing for a request without a cookie whose view reads neither
the session nor the user. The lane is off when the chain is not the one it was checked against
(`CHECKED_MIDDLEWARE`), and takes an endpoint only under the DRF policy and the steps it reproduces
(`_reproducible`, its own methods naming none of the view's dispatch state), made by `as_view()` without arguments
or decorator, at a path no other pattern takes first. tests/memory/test_fast_lane.py compares its answers with Django's
path's: the bytes and the headers in order. REST_FAST_LANE=false turns it off.
"""

from __future__ import annotations

import inspect
import io
import logging
import time
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.resolvers import RoutePattern
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from memory.access import WORKSPACE_HEADER, Access
from memory.api.authentication import BearerTokenAuthentication
from memory.api.base import Endpoint, rest_access
from memory.api.handover import LaneCall, hand_over
from memory.api.parsers import LimitedJSONParser
from memory.api.throttling import TokenRateThrottle, rate_verdict
from memory.connectivity import READ_TOOLS, outage_noted
from memory.credentials import bearer_secret
from memory.errors import AuthenticationError
from memory.services.telemetry import call_record
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
# The Content-Type headers the lane takes, as clients send them (curl, httpx, requests, fetch, axios); DRF's parser
# takes more, and answers the rest: Django's path gets those. The Accept header is negotiated by DRF's own class.
JSON_BODIES = frozenset({"application/json", "application/json; charset=utf-8", "application/json;charset=utf-8"})
_WORKSPACE_META = "HTTP_" + WORKSPACE_HEADER.upper().replace("-", "_")


class FastLane:
    def __init__(self) -> None:
        self._routes: dict[str, type[Endpoint]] | None = None
        self._security = SecurityMiddleware(_never_called)
        self._common = CommonMiddleware(_never_called)
        self._frames = XFrameOptionsMiddleware(_never_called)
        self._parser = LimitedJSONParser()
        self._renderer = JSONRenderer()
        self._negotiation = DefaultContentNegotiation()

    def routes(self) -> dict[str, type[Endpoint]]:
        """Each path the lane answers (path_info), and its endpoint: from the URL configuration, on first use."""
        if self._routes is None:
            self._routes = lane_routes() if tuple(settings.MIDDLEWARE) == CHECKED_MIDDLEWARE else {}
            if not self._routes:
                logger.warning("api.fast_lane_off", extra={"reason": "no endpoint, or another middleware chain"})
        return self._routes

    def answer(self, request: HttpRequest) -> HttpResponse | None:
        """The answer to an ordinary call of a lane endpoint; None hands the call to Django's path."""
        endpoint = self.routes().get(request.path_info)
        if endpoint is None or not self._ordinary(request) or (accepted := self._accepted(request)) is None:
            return None
        started = time.perf_counter()
        try:
            data = endpoint.validated(self._parsed(request))
        except Exception:  # Django's path answers a body it refuses
            return None
        call = LaneCall(token=None, counted=None, touched=False, started=started)
        try:
            token, counted = token_call_for_secret(
                bearer_secret(request.META["HTTP_AUTHORIZATION"]), via_query=False, count_call=True
            )
        except AuthenticationError:  # Django's path checks the token again and refuses it
            return None
        except Exception as exc:
            hand_over(request, replace(call, failure=exc))
            return None
        call = replace(call, token=token, counted=counted)
        try:
            token_touch(token)
        except Exception as exc:
            hand_over(request, replace(call, failure=exc))
            return None
        call = replace(call, counted=rate_verdict(token, counted), touched=True)
        hand_over(request, call)  # from here on, Django's path takes the call as the lane leaves it
        if call.counted is not None and not call.counted.allowed:
            return None
        access = None
        try:
            access = rest_access(token, data, request.META.get(_WORKSPACE_META))
            response = self._answered(request, endpoint, access, data, accepted)
        except Exception as exc:
            hand_over(request, replace(call, access=access, failure=exc))
            return None
        if response is None:
            return None
        call_record(
            surface="rest",
            tool=endpoint.tool,
            token=token,
            access=access,
            status=response.status_code,
            error_code="",
            started=started,
            request_bytes=int(request.META["CONTENT_LENGTH"]),
            response_bytes=len(response.content),
        )
        return response

    def _answered(
        self, request: HttpRequest, endpoint: type[Endpoint], access: Access, data: dict[str, Any], accepted: str
    ) -> HttpResponse | None:
        """The lane's answer; None where `handle` answered with a response of its own (Endpoint.respond passes it
        on, and DRF finishes it by its kind), or read what Django's path sets on the view and the lane's does not
        hold (through a function `_reads_only_its_arguments` does not see): Django's path runs the call again and
        answers it, the call counted once. A read call may run twice; no lane endpoint does either today."""
        view = endpoint()
        view.access = access  # as Endpoint.respond sets it
        try:
            result = view.handle(access, data)
        except AttributeError as exc:
            if exc.obj is view:
                return None
            raise
        if isinstance(result, HttpResponseBase):
            # Not closed: close() ends the request (request_finished closes its database connection); a file it
            # holds is closed as it is collected.
            return None
        response = HttpResponse(
            self._renderer.render(endpoint.answer_of(result), accepted_media_type=accepted),
            content_type=self._renderer.media_type,
            status=endpoint.success_status,
        )
        for name, value in view.default_response_headers.items():
            response[name] = value
        # Innermost first, as the chain runs them; each sets its headers on this response and returns it.
        self._frames.process_response(request, response)
        self._common.process_response(request, response)
        self._security.process_response(request, response)
        return response

    def _ordinary(self, request: HttpRequest) -> bool:
        """A call the lane answers as Django's path would: a bearer token, a JSON body of a declared length, no
        cookie, no query string, a valid host, no redirect, no outage."""
        meta = request.META
        if request.method != "POST" or meta.get("QUERY_STRING") or meta.get("HTTP_COOKIE"):
            return False
        if "HTTP_TRANSFER_ENCODING" in meta or not meta.get("CONTENT_LENGTH", "").isdecimal():
            return False
        if meta.get("CONTENT_TYPE", "").lower() not in JSON_BODIES or int(meta["CONTENT_LENGTH"]) == 0:
            return False
        if not bearer_secret(meta.get("HTTP_AUTHORIZATION", "")):
            return False
        if outage_noted():
            return False
        try:  # an SSL redirect, a disallowed user agent or host, a missing slash: Django's path answers those
            return self._security.process_request(request) is None and self._common.process_request(request) is None
        except Exception:
            return False

    def _accepted(self, request: HttpRequest) -> str | None:
        """The media type DRF's content negotiation accepts for the answer (the JSON renderer's, with what the Accept
        header adds to it: `indent=4`), as DRF renders it; None when it accepts none (Django's path answers 406)."""
        try:
            return self._negotiation.select_renderer(Request(request), [self._renderer])[1]
        except NotAcceptable:
            return None

    def _parsed(self, request: HttpRequest) -> Any:
        """The JSON body, through the API's parser under DRF's encoding rule (ParseError, ValidationError, ...)."""
        context = {"request": request, "encoding": request.encoding or settings.DEFAULT_CHARSET}
        return self._parser.parse(io.BytesIO(request.body), "application/json", context)


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
                    path = "/" + prefix + str(entry.pattern)
                    if _as_made(entry.callback, kind) and _reproducible(kind) and resolve(path).func is entry.callback:
                        routes[path] = kind
                    else:
                        logger.warning("api.fast_lane_skipped", extra={"tool": kind.tool, "path": path})

    walk(get_resolver().url_patterns, "")
    return routes


def _as_made(callback: Any, kind: type[Endpoint]) -> bool:
    """The view is the endpoint's `as_view()` without arguments and under no decorator: each function along its
    `__wrapped__` chain runs the code of a fresh `as_view()`'s (a decorator made with `functools.wraps` keeps the
    view's `cls` and `initkwargs`, and adds a function of its own code)."""
    return not getattr(callback, "initkwargs", None) and _codes(callback) == _codes(kind.as_view())


def _codes(view: Any) -> list[Any]:
    codes = []
    while view is not None:
        codes.append(getattr(view, "__code__", None))
        view = getattr(view, "__wrapped__", None)
    return codes


# Endpoint's (and DRF's) steps the lane runs in its own way; an endpoint that changes one is not answered by the lane.
LANE_STEPS = (
    "dispatch", "initialize_request", "initial", "perform_authentication", "check_permissions", "check_throttles",
    "perform_content_negotiation", "get_authenticators", "get_permissions", "get_throttles", "get_parsers",
    "get_renderers", "get_content_negotiator", "get_exception_handler", "get_parser_context", "get_renderer_context",
    "default_response_headers", "post", "respond", "parse", "validated", "build_access", "answer_of",
    "finalize_response", "handle_exception", "setup", "as_view",
)  # fmt: skip


def _reproducible(kind: type[Endpoint]) -> bool:
    """The endpoint answers under the policy the lane reproduces: a read call with a JSON body and answer, the
    bearer token, the rate window, the API's parser, renderer and content negotiation, no versioning, and
    Endpoint's own steps around its `handle`."""
    return (
        kind.tool in READ_TOOLS
        and all(inspect.getattr_static(kind, step) is inspect.getattr_static(Endpoint, step) for step in LANE_STEPS)
        and kind.content_negotiation_class is DefaultContentNegotiation
        and "post" in kind.http_method_names
        and not kind.answer_media_type
        and list(kind.authentication_classes) == [BearerTokenAuthentication]
        and list(kind.permission_classes) == [IsAuthenticated]
        and list(kind.throttle_classes) == [TokenRateThrottle]
        and list(kind.parser_classes) == [LimitedJSONParser]
        and list(kind.renderer_classes) == [JSONRenderer]
        and kind.versioning_class is None
        and _reads_only_its_arguments(kind)
    )


# What DRF's dispatch sets on a view before its `handle`; the lane's view holds only the Access (`access`).
DISPATCH_STATE = frozenset({"request", "args", "kwargs", "headers", "format_kwarg"})


def _reads_only_its_arguments(kind: type[Endpoint]) -> bool:
    """No method of the endpoint's own classes (those Endpoint does not share, mixins included; through decorators,
    static and class methods (`__wrapped__`), properties (`fget`) and cached properties (`func`), and the functions
    defined inside them) names an attribute of that state, as an
    attribute or a string (`self.request`, `getattr(self, "request")`). A name alike elsewhere (`reply.headers`)
    keeps an endpoint out too: off the lane, never answered wrong. What a function it calls reads is not seen here;
    `FastLane._answered` hands such a call over when the lane's view lacks it."""
    members = [member for klass in kind.__mro__ if klass not in Endpoint.__mro__ for member in vars(klass).values()]
    seen: set[int] = set()
    while members:
        member = members.pop()
        if id(member) in seen:
            continue
        seen.add(id(member))
        members += [inner for name in ("fget", "func", "__wrapped__") if (inner := getattr(member, name, None))]
        if inspect.iscode(code := getattr(member, "__code__", member)):
            names = {*code.co_names, *(value for value in code.co_consts if isinstance(value, str))}
            if DISPATCH_STATE & names:
                return False
            members += [inner for inner in code.co_consts if inspect.iscode(inner)]
    return True


def _never_called(request: HttpRequest) -> HttpResponse:
    raise AssertionError("the lane runs the middleware's request and response halves only")

"""The fast lane (memory.api.lane): which calls it answers, that its answer is Django's path's to the byte and the
header, and that a call it hands over is counted, touched and logged once, and answered by Django's path."""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.db import OperationalError, connection
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import path as url
from django.views.decorators.cache import never_cache
from psycopg_pool import PoolTimeout

from config.handler import OneHopHandler
from memory.access import WORKSPACE_HEADER, access_for_token
from memory.api.handover import LaneCall, hand_over, handed_over
from memory.api.lane import CHECKED_MIDDLEWARE, FastLane, lane_routes
from memory.api.memories import MemoryGet, MemorySearch
from memory.api.recall import ContextBootstrap, QueryReference, QuerySearch, StewardRecall
from memory.api.scratchpad import ScratchpadRead
from memory.connectivity import note_outage, outage_noted, probe
from memory.errors import NotFound
from memory.models import ChangeSurface, Scope, ToolEvent, User
from memory.recall.search import SearchRequest, search
from tests.conftest import Api, Persona, error_code, issue
from tests.memory.test_recall_api import save_reference, say
from tests.memory.test_reconnect import drop_connection
from tests.process import AsgiService, served_on_test_database

pytestmark = pytest.mark.django_db

CALLS: dict[str, dict[str, Any]] = {
    "/query/search": {"query": "zeppelin balloon rides", "limit": 5},
    "/query/reference": {"query": "zeppelin balloon handbook"},
    "/recall": {"query": "zeppelin balloon rides"},
    "/context/bootstrap": {},
    "/memory/get": {"key": "balloon.pilot"},
    "/memory/search": {"query": "Ada"},
    "/scratchpad/read": {},
}
# What each answer holds when it found the memory the fixture made.
FOUND: dict[str, Callable[[dict[str, Any]], bool]] = {
    "/query/search": lambda answer: bool(answer["searchResults"]),
    "/query/reference": lambda answer: bool(answer["searchResults"]),
    "/recall": lambda answer: bool(answer["memories"]),
    "/context/bootstrap": lambda answer: "zeppelin" in json.dumps(answer["preferences"] + answer["pinned"]),
    "/memory/get": lambda answer: "\nAda\n" in answer["memory"]["value"],  # between the untrusted-data markers
    "/memory/search": lambda answer: bool(answer["memories"]),
    "/scratchpad/read": lambda answer: "Ask Ada about the next zeppelin ride." in answer["content"],
}
SEARCH = "/query/search"
ASKED = CALLS[SEARCH]


@pytest.fixture
def memory(api: Api, owner: Persona) -> None:
    say(api, owner, "I love zeppelin balloon rides over the lake.", "My sister Ada flies zeppelins for a living.")
    save_reference(api, owner, "handbook", "The zeppelin balloon handbook: check the envelope before every ride.")
    for path, body in (
        ("/memory/save", {"key": "balloon.pilot", "value": "Ada", "kind": "fact"}),
        ("/scratchpad/write", {"content": "Ask Ada about the next zeppelin ride."}),
    ):
        assert api.post(path, owner, body).status_code == 200


def post(
    path: str,
    persona: Persona | None,
    body: Any = ASKED,
    *,
    raw: str | None = None,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
    **meta: str,
) -> HttpRequest:
    """A request as the web process makes it (the lane reads the request, never the ASGI scope)."""
    sent = {**(persona.headers if persona else {}), **(headers or {})}
    payload = raw if raw is not None else json.dumps(body)
    made = RequestFactory().generic("POST", path, payload, content_type=content_type, headers=sent)
    made.META.update(meta)
    return made


def djangos_path(request: HttpRequest) -> HttpResponse:
    """The answer of the middleware chain and the view to this very request (the lane's findings on it included),
    readable as the test client's."""
    handler = BaseHandler()
    handler.load_middleware()
    response = handler.get_response(request)
    assert isinstance(response, HttpResponse)
    response.json = lambda: json.loads(response.content)  # type: ignore[attr-defined]
    return response


AS_OF = re.compile(rb' as_of=\\"[^"\\]*\\"')  # inside the JSON text of `formattedResult`


def answer_of(content: bytes) -> bytes:
    """The answer's bytes, without the moment its prompt block was rendered (two calls never share it)."""
    return AS_OF.sub(b"", content)


def same_answer(answered: HttpResponse, expected: HttpResponse) -> None:
    assert answered.status_code == expected.status_code
    assert answer_of(answered.content) == answer_of(expected.content)
    headers = [(name, value) for name, value in answered.items() if name != "Content-Length"]
    assert headers == [(name, value) for name, value in expected.items() if name != "Content-Length"]
    assert len(answered.content) - len(answer_of(answered.content)) == len(expected.content) - len(
        answer_of(expected.content)
    )  # the same length of `as_of`: Content-Length is compared through the rest of the bytes


@pytest.mark.parametrize("path", list(CALLS))
def test_the_lane_answers_an_ordinary_call_as_djangos_path_does(
    api: Api, owner: Persona, memory: None, path: str
) -> None:
    answered = FastLane().answer(post(path, owner, CALLS[path]))
    assert answered is not None
    expected = api.post(path, owner, CALLS[path])
    assert expected.status_code == 200
    same_answer(answered, expected)
    assert FOUND[path](json.loads(answered.content))  # found what the fixture made


@pytest.mark.parametrize("path", list(CALLS))
def test_the_lane_answers_another_users_call_of_their_own_memory_as_djangos_path_does(
    api: Api, other: Persona, memory: None, path: str
) -> None:
    answered = FastLane().answer(post(path, other, CALLS[path]))  # bob's memory holds nothing
    expected = api.post(path, other, CALLS[path])
    if path == "/memory/get":  # a key bob never saved: 404, which only Django's path answers
        assert answered is None
        assert error_code(expected) == "NOT_FOUND"
        return
    assert answered is not None
    same_answer(answered, expected)
    assert not FOUND[path](json.loads(answered.content))  # found nothing of alice's


@pytest.mark.parametrize("path", ["/context/bootstrap", "/scratchpad/read"])  # their bodies are optional
def test_a_call_without_a_body_is_handed_over_and_one_of_blanks_is_answered_as_djangos_path_does(
    api: Api, owner: Persona, memory: None, path: str
) -> None:
    bare = post(path, owner, raw="")
    assert FastLane().answer(bare) is None
    assert handed_over(bare) is None
    same_answer(djangos_path(bare), api.post(path, owner, raw=""))
    answered = FastLane().answer(post(path, owner, raw=" "))  # parsed as {} by the API's parser
    assert answered is not None
    same_answer(answered, api.post(path, owner, raw=" "))


def test_a_scratchpad_read_without_a_partition_is_refused_by_djangos_path_once_counted(
    api: Api, owner: Persona, memory: None
) -> None:
    workspace = {WORKSPACE_HEADER: "everything"}  # every partition in reach: which scratchpad is not said
    made = post("/scratchpad/read", owner, {}, headers=workspace)
    assert FastLane().answer(made) is None
    handed = handed_over(made)
    assert handed is not None and handed.counted is not None
    answer = djangos_path(made)
    same_answer(answer, api.post("/scratchpad/read", owner, {}, headers=workspace))
    assert answer.status_code == 400


@pytest.mark.parametrize(
    "headers",
    [
        {"Accept": "application/json"},
        {"Accept": "*/*"},
        {"Accept": "application/json, text/plain, */*"},  # axios
        {"Accept": "text/html, application/json"},
        {"Accept": "text/html;q=0.9, */*;q=0.8"},
        {"Accept": "application/*"},
        {"Accept": "application/json; indent=4"},  # DRF indents its answer; so does the lane
        {"Accept": "application/json; version=2"},  # a parameter the renderer ignores
        {"Content-Type": "application/json; charset=UTF-8"},
    ],
)
def test_the_lane_takes_the_headers_clients_send_and_answers_as_djangos_path_does(
    api: Api, owner: Persona, memory: None, headers: dict[str, str]
) -> None:
    headers = dict(headers)  # the parameter's own dict stays as it is, for a rerun
    content_type = headers.pop("Content-Type", "application/json")
    answered = FastLane().answer(post(SEARCH, owner, content_type=content_type, headers=headers))
    assert answered is not None
    same_answer(answered, api.post(SEARCH, owner, ASKED, content_type=content_type, headers=headers))


def test_the_lane_takes_the_read_endpoints_that_ask_for_it_under_the_chain_it_was_checked_against() -> None:
    # A change of the middleware chain turns the lane off until someone checks what the new middleware does to an API
    # call, and adds it to CHECKED_MIDDLEWARE (memory.api.lane) or makes the lane run it.
    assert tuple(settings.MIDDLEWARE) == CHECKED_MIDDLEWARE
    assert lane_routes() == {
        "/query/search": QuerySearch,
        "/query/reference": QueryReference,
        "/recall": StewardRecall,
        "/context/bootstrap": ContextBootstrap,
        "/memory/get": MemoryGet,
        "/memory/search": MemorySearch,
        "/scratchpad/read": ScratchpadRead,
    }


def test_another_middleware_chain_turns_the_lane_off(settings: Any, owner: Persona, memory: None) -> None:
    settings.MIDDLEWARE = [*CHECKED_MIDDLEWARE, "django.middleware.gzip.GZipMiddleware"]
    lane = FastLane()
    assert lane.answer(post(SEARCH, owner)) is None
    assert lane.routes() == {}


def test_the_web_process_asks_the_lane_unless_it_is_turned_off(settings: Any, owner: Persona, memory: None) -> None:
    handler = OneHopHandler()
    assert handler._lane_answer(post(SEARCH, owner)) is not None
    settings.REST_FAST_LANE = False
    assert handler._lane_answer(post(SEARCH, owner)) is None


def _deep(levels: int) -> str:
    return '{"query": "x", "extra": ' + "[" * levels + "]" * levels + "}"


# Each call, and the status Django's path answers it with.
HANDED_OVER_AS_THEY_CAME: dict[str, tuple[dict[str, Any], int]] = {
    "a query string": ({"QUERY_STRING": "token=abc"}, 200),  # the header's token wins, as always
    "a cookie": ({"headers": {"Cookie": "sessionid=abc"}}, 200),
    "a chunked body": ({"HTTP_TRANSFER_ENCODING": "chunked"}, 200),
    "a form": ({"content_type": "application/x-www-form-urlencoded", "raw": "query=zeppelin"}, 415),
    "an empty body": ({"raw": ""}, 400),
    "malformed JSON": ({"raw": '{"query": "zeppelin"'}, 400),
    "NaN": ({"raw": '{"query": "zeppelin", "limit": NaN}'}, 400),
    "a lone surrogate": ({"raw": '{"query": "\\ud800"}'}, 400),
    "JSON nested too deep": ({"raw": _deep(200)}, 400),
    "a charset the body is not in": ({"content_type": "application/json; charset=utf-16"}, 400),
    "an unknown field": ({"body": {"query": "zeppelin", "colour": "red"}}, 400),
    "no query": ({"body": {}}, 400),
    "a list": ({"body": ["zeppelin"]}, 400),
    "HTML asked for": ({"headers": {"Accept": "text/html"}}, 406),
    "JSON asked for past 64 other types": ({"headers": {"Accept": "text/html, " * 64 + "application/json"}}, 406),
    "a Content-Type over 256 characters": ({"content_type": "application/json; x=" + "y" * 300}, 415),
    "an empty Accept": ({"headers": {"Accept": ""}}, 406),
    "Basic credentials": ({"headers": {"Authorization": "Basic YWxpY2U6cHc="}}, 401),
    "no credentials": ({"persona": None}, 401),
    "an unknown token": ({"persona": "outsider"}, 401),
    "a revoked token": ({"persona": "revoked"}, 401),
    "a host not allowed": ({"headers": {"Host": "evil.example"}}, 400),
    "GET": ({"method": "GET"}, 405),
}  # fmt: skip


@pytest.mark.parametrize("case", list(HANDED_OVER_AS_THEY_CAME))
def test_a_call_out_of_the_ordinary_is_handed_over_as_it_came_and_answered_by_djangos_path(
    request: pytest.FixtureRequest, owner: Persona, memory: None, case: str
) -> None:
    given, status = HANDED_OVER_AS_THEY_CAME[case]
    options = dict(given)
    persona = options.pop("persona", owner)
    if isinstance(persona, str):
        persona = request.getfixturevalue(persona)
    method = options.pop("method", "POST")
    made = post(SEARCH, persona, **options)
    made.method = method
    assert FastLane().answer(made) is None
    assert handed_over(made) is None  # nothing counted, touched or learned: Django's path starts afresh
    answer = djangos_path(made)
    assert answer.status_code == status, answer.content
    if status >= 400 and answer["Content-Type"] == "application/json":
        assert error_code(answer)


def test_a_call_of_a_payload_over_the_cap_is_handed_over(settings: Any, owner: Persona, memory: None) -> None:
    settings.MAX_JSON_BODY_BYTES = 64
    made = post(SEARCH, owner, {"query": "zeppelin " * 20})
    assert FastLane().answer(made) is None
    assert handed_over(made) is None
    assert error_code(djangos_path(made)) == "PAYLOAD_TOO_LARGE"


def test_no_call_takes_the_lane_while_an_outage_is_noted(owner: Persona, memory: None) -> None:
    note_outage()  # the suite's fixture probes the database afterwards, which ends it
    assert FastLane().answer(post(SEARCH, owner)) is None


def test_a_refused_rate_is_answered_by_djangos_path_and_a_handed_over_call_counts_once(
    alice: User, memory: None
) -> None:
    limited = issue(alice, "limited", scopes=Scope.values, rate_limit_per_minute=3)
    lane = FastLane()
    assert lane.answer(post(SEARCH, limited)) is not None  # the first call of the minute
    # The second: counted and touched by the lane, refused while building its Access (an unknown access scope).
    second = post(SEARCH, limited, headers={WORKSPACE_HEADER: "everything"})
    assert lane.answer(second) is None
    handed = handed_over(second)
    assert handed is not None and handed.token.pk == limited.token.pk  # type: ignore[union-attr]
    assert handed.counted is not None and handed.counted.allowed
    assert error_code(djangos_path(second)) == "VALIDATION_ERROR"
    assert lane.answer(post(SEARCH, limited)) is not None  # the third: had the second counted twice, refused here
    fourth = post(SEARCH, limited)
    assert lane.answer(fourth) is None
    refused = handed_over(fourth)
    assert refused is not None and refused.counted is not None and not refused.counted.allowed
    answer = djangos_path(fourth)
    assert error_code(answer) == "RATE_LIMITED"
    assert int(answer["Retry-After"]) >= 1
    logged = ToolEvent.objects.filter(token=limited.token).order_by("id").values_list("status_code", "error_code")
    assert list(logged) == [(200, ""), (400, "VALIDATION_ERROR"), (200, ""), (429, "RATE_LIMITED")]


@pytest.mark.parametrize("accept", [{}, {"Accept": "application/json; indent=4"}])  # handed over once negotiated
def test_an_access_refused_after_the_tokens_check_is_answered_by_djangos_path(
    api: Api, owner: Persona, other: Persona, memory: None, accept: dict[str, str]
) -> None:
    body = {**ASKED, "userId": "alice"}  # bob may not act for alice
    made = post(SEARCH, other, body, headers=accept)
    assert FastLane().answer(made) is None
    assert handed_over(made) is not None
    answer = djangos_path(made)
    same_answer(answer, api.post(SEARCH, other, body, headers=accept))
    assert error_code(answer) == "NOT_FOUND"  # out of reach reads as not found
    assert (b'\n    "error"' in answer.content) == bool(accept)  # indented as asked, by Django's path


def test_a_token_the_lane_could_not_touch_is_touched_and_counted_once_by_djangos_path(
    alice: User, memory: None
) -> None:
    persona = issue(alice, "untouched", scopes=Scope.values, rate_limit_per_minute=2)
    assert persona.token is not None and persona.token.last_used_at is None
    made = post(SEARCH, persona)  # nothing counted yet (counted=None): Django's path counts the call
    hand_over(made, LaneCall(token=persona.token, counted=None, touched=False, started=time.perf_counter()))
    assert djangos_path(made).status_code == 200
    persona.token.refresh_from_db()
    assert persona.token.last_used_at is not None
    lane = FastLane()
    assert lane.answer(post(SEARCH, persona)) is not None  # the second call of the minute
    assert lane.answer(post(SEARCH, persona)) is None  # the third is refused: the first counted once


def test_a_failure_the_lane_met_is_raised_once_by_djangos_path_without_running_the_call_again(
    owner: Persona, memory: None
) -> None:
    assert owner.token is not None
    lane_access = access_for_token(
        token=owner.token, user_id=None, partition_key=None, workspace=False, surface=ChangeSurface.REST
    )
    made = post(SEARCH, owner)
    failure = NotFound("No such thing.")
    hand_over(made, LaneCall(owner.token, None, True, time.perf_counter(), access=lane_access, failure=failure))
    with CaptureQueriesContext(connection) as ran:
        answer = djangos_path(made)
    assert error_code(answer) == "NOT_FOUND"
    assert not [query for query in ran if "memory_claim" in query["sql"]]  # the search did not run again
    event = ToolEvent.objects.get(token=owner.token, tool="query.search")
    assert (event.status_code, event.partition_key) == (404, lane_access.partition.key)  # type: ignore[union-attr]


def test_a_token_check_that_met_an_unavailable_database_is_answered_503_once(alice: User, memory: None) -> None:
    limited = issue(alice, "limited", scopes=Scope.values, rate_limit_per_minute=1)
    made = post(SEARCH, limited)
    failure = OperationalError("the pool timed out")
    failure.__cause__ = PoolTimeout("couldn't get a connection after 3.00 sec")
    hand_over(made, LaneCall(token=None, counted=None, touched=False, started=time.perf_counter(), failure=failure))
    answer = djangos_path(made)  # without waiting on the pool a second time: the lane's failure is raised
    assert error_code(answer) == "SERVICE_UNAVAILABLE"
    assert answer["Retry-After"] == "5"
    probe()  # the answer noted an outage; the database is here
    assert FastLane().answer(post(SEARCH, limited)) is not None  # raised before the token's check: nothing counted


def test_the_lanes_own_fault_is_logged_and_the_call_answered_by_djangos_path(
    owner: Persona, memory: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(lane: FastLane, request: HttpRequest) -> None:
        raise RuntimeError("a bug of the lane")

    monkeypatch.setattr(FastLane, "answer", broken)
    assert OneHopHandler()._lane_answer(post(SEARCH, owner)) is None
    assert "api.fast_lane_failed" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_connection_dropped_under_the_lane_is_replaced_once_by_djangos_path(
    owner: Persona, memory: None, settings: Any
) -> None:
    settings.SEARCH_HELD_VECTORS = False  # a held copy of this small memory answers without a statement to fail
    lane = FastLane()
    assert lane.answer(post(SEARCH, owner)) is not None  # the token and its partitions known: no statement before
    drop_connection()  # the search's first statement meets the dropped connection
    made = post(SEARCH, owner)
    try:
        assert lane.answer(made) is None
        handed = handed_over(made)
        assert handed is not None and handed.failure is not None and handed.access is not None
        answer = djangos_path(made)  # the failure answered as its own: reconnect once, run again
        assert answer.status_code == 200, answer.content
        assert not outage_noted()  # one dropped connection is no outage
        searches = ToolEvent.objects.filter(token=owner.token, tool="query.search")
        assert sorted(searches.values_list("status_code", flat=True)) == [200, 200]  # one row a call
    finally:
        connection.close()


class OtherParse(QuerySearch):
    def parse(self, request: Any) -> dict[str, Any]:
        return super().parse(request)


class RespondingGet(MemoryGet):
    """An endpoint whose `handle` answers with a response of its own, as an endpoint may (Endpoint.respond)."""

    def handle(self, access: Any, data: dict[str, Any]) -> Any:
        return HttpResponse(b'{"answeredBy": "handle"}', content_type="application/json")


class RequestReading(MemorySearch):
    """An endpoint whose answer reads what Django's path sets on the view (here inside a function of its `handle`)."""

    def handle(self, access: Any, data: dict[str, Any]) -> Any:
        return {**super().handle(access, data), "path": (lambda: self.request.path)()}


class ReadsRequest:
    def request_path(self) -> str:
        return self.request.path  # type: ignore[attr-defined]


class MixedIn(MemorySearch, ReadsRequest):
    """Reads the view's request through a mixin's method (the mixin after Endpoint in the MRO)."""

    def handle(self, access: Any, data: dict[str, Any]) -> Any:
        return {**super().handle(access, data), "path": self.request_path()}


def traced(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return method(*args, **kwargs)

    return wrapper


class DecoratedHandle(MemorySearch):
    """Reads the view's arguments under a decorator (the wrapper's code names nothing)."""

    @traced
    def handle(self, access: Any, data: dict[str, Any]) -> Any:
        return {**super().handle(access, data), "arguments": getattr(self, "kwargs")}  # noqa: B009


class Propertied(MemorySearch):
    """Reads the view's request through a property."""

    @property
    def caller(self) -> str:
        return self.request.path

    def handle(self, access: Any, data: dict[str, Any]) -> Any:
        return {**super().handle(access, data), "caller": self.caller}


class Cached(MemorySearch):
    """Reads the view's arguments through a cached property."""

    @functools.cached_property
    def asked(self) -> Any:
        return self.kwargs

    def handle(self, access: Any, data: dict[str, Any]) -> Any:
        return {**super().handle(access, data), "asked": self.asked}


class Static(MemorySearch):
    """Reads the view's headers through a static method."""

    @staticmethod
    def headers_of(view: Any) -> Any:
        return view.headers

    def handle(self, access: Any, data: dict[str, Any]) -> Any:
        return {**super().handle(access, data), "headers": self.headers_of(self)}


class SetUp(MemorySearch):
    """Keeps what Django's path gives its view at set-up (`setup()`, before dispatch)."""

    def setup(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        super().setup(request, *args, **kwargs)
        self.asked_at = time.time()


def path_of(view: Any) -> str:
    return view.request.path


class HelperReading(MemoryGet):
    """Reads the view's request through a function of the module, which no check of the class sees."""

    def handle(self, access: Any, data: dict[str, Any]) -> Any:
        return {"path": path_of(self)}


def other_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"{}", content_type="application/json")


def copied(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A decorator that copies the view's attributes (its `cls`, `initkwargs` and `__wrapped__`) rather than wrap it."""

    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return view(request, *args, **kwargs)

    wrapper.__dict__.update(view.__dict__)
    return wrapper


# A URL configuration for the tests below (ROOT_URLCONF = this module): a path taken by an earlier pattern (another
# view; the same endpoint made with other arguments), an endpoint that changes one of the steps the lane runs in its
# own way, endpoints under a decorator (one made with `functools.wraps`, one copying), endpoints that read the view's
# request or arguments (in a function of `handle`, a mixin's method, a decorated `handle`, a property, a cached
# property, a static method, a function of the module), one that changes its set-up, and one whose `handle` answers
# with a response.
urlpatterns = [
    url("query/search", other_view),
    url("query/search", QuerySearch.as_view()),
    url("query/other", OtherParse.as_view()),
    url("memory/search", MemorySearch.as_view(success_status=200)),
    url("memory/search", MemorySearch.as_view()),
    url("scratchpad/read", never_cache(ScratchpadRead.as_view())),
    url("query/reference", copied(QueryReference.as_view())),
    url("memory/list", RequestReading.as_view()),
    url("memory/history", MixedIn.as_view()),
    url("session/get", DecoratedHandle.as_view()),
    url("session/list", Propertied.as_view()),
    url("session/events", Cached.as_view()),
    url("handoff/list", Static.as_view()),
    url("coord/health", SetUp.as_view()),
    url("handoff/load", HelperReading.as_view()),
    url("memory/get", RespondingGet.as_view()),
    url("recall", StewardRecall.as_view()),
]


def test_the_lane_leaves_a_path_another_pattern_takes_a_decorated_view_and_an_endpoint_that_changes_or_reads_its_steps(
    settings: Any,
) -> None:
    settings.ROOT_URLCONF = __name__
    assert lane_routes() == {"/memory/get": RespondingGet, "/handoff/load": HelperReading, "/recall": StewardRecall}


@pytest.mark.parametrize(
    ("path", "answered"),
    [("/memory/get", {"answeredBy": "handle"}), ("/handoff/load", {"path": "/handoff/load"})],
    ids=["a response of its own", "the view's request read by a function"],
)
def test_a_call_the_lanes_view_cannot_answer_is_handed_over_and_answered_by_djangos_path_counted_once(
    settings: Any, alice: User, memory: None, path: str, answered: dict[str, str]
) -> None:
    settings.ROOT_URLCONF = __name__
    limited = issue(alice, "limited", scopes=Scope.values, rate_limit_per_minute=2)
    made = post(path, limited, {"key": "balloon.pilot"})
    lane = FastLane()
    assert lane.answer(made) is None
    handed = handed_over(made)
    assert handed is not None and handed.failure is None and handed.touched
    answer = djangos_path(made)
    assert (answer.status_code, json.loads(answer.content)) == (200, answered)
    assert list(ToolEvent.objects.filter(token=limited.token).values_list("tool", "status_code")) == [
        ("memory.get", 200)
    ]
    assert lane.answer(post("/recall", limited, CALLS["/recall"])) is not None  # the second call of the minute
    assert lane.answer(post("/recall", limited, CALLS["/recall"])) is None  # the third refused: counted once above


def test_the_lanes_call_is_logged_and_its_token_touched(alice: User, memory: None) -> None:
    persona = issue(alice, "fresh", scopes=Scope.values)
    assert persona.token is not None and persona.token.last_used_at is None
    made = post(SEARCH, persona, {**ASKED, "partitionKey": "memory:personal"})
    answered = FastLane().answer(made)
    assert answered is not None
    persona.token.refresh_from_db()
    assert persona.token.last_used_at is not None
    event = ToolEvent.objects.get(token=persona.token)
    assert (event.surface, event.tool, event.status_code, event.error_code) == ("rest", "query.search", 200, "")
    assert (event.owner_id, event.partition_key) == (alice.pk, "memory:personal")
    assert (event.request_bytes, event.response_bytes) == (int(made.META["CONTENT_LENGTH"]), len(answered.content))


def test_the_lane_adds_no_statement_to_the_search_but_its_call_log_row(owner: Persona, memory: None) -> None:
    lane = FastLane()
    assert lane.answer(post(SEARCH, owner)) is not None  # the token and the word counts are known from here on
    assert owner.token is not None
    access = access_for_token(
        token=owner.token, user_id=None, partition_key=None, workspace=False, surface=ChangeSurface.REST
    )
    with CaptureQueriesContext(connection) as searched:
        search(access, SearchRequest(query=ASKED["query"], limit=ASKED["limit"]))
    with CaptureQueriesContext(connection) as laned:
        assert lane.answer(post(SEARCH, owner)) is not None
    log_row = [] if settings.TOOL_EVENTS_DEFERRED else ['INSERT INTO "memory_toolevent"']
    assert statements(laned) == statements(searched) + log_row


def statements(captured: CaptureQueriesContext) -> list[str]:
    """Each statement's start; the savepoints of the test's own transaction left out."""
    return [query["sql"].strip()[:30] for query in captured if "SAVEPOINT" not in query["sql"]]


@pytest.fixture
def server(transactional_db: None) -> Iterator[AsgiService]:
    with served_on_test_database("fast-lane-server.log", RATE_LIMIT_PER_MINUTE="100000") as service:
        yield service


def test_a_served_call_is_answered_as_djangos_path_answers_it_for_every_persona(
    server: AsgiService, api: Api, owner: Persona, other: Persona, outsider: Persona, revoked: Persona, memory: None
) -> None:
    calls: list[tuple[str, Persona | None, dict[str, Any] | str]] = [
        *(
            (path, persona, body)
            for path, body in CALLS.items()
            for persona in (owner, other, outsider, revoked, None)  # bob's own memory: empty, or NOT_FOUND
        ),
        *((path, other, {**body, "userId": "alice"}) for path, body in CALLS.items()),
        *((path, owner, "[]") for path in CALLS),
        (SEARCH, owner, {"query": ""}),
        (SEARCH, owner, '{"query": '),
    ]
    for path, persona, body in calls:
        raw = body if isinstance(body, str) else json.dumps(body)
        headers = {"Content-Type": "application/json", **(persona.headers if persona else {})}
        served = httpx.post(f"{server.url}{path}", content=raw, headers=headers, timeout=60)
        expected = api.post(path, persona, raw=raw)
        assert served.status_code == expected.status_code, (path, persona and persona.name, served.text)
        assert answer_of(served.content) == answer_of(expected.content)
        sent = [(name, value) for name, value in served.headers.items() if name not in ("date", "server")]
        assert sent == [(name.lower(), value) for name, value in expected.items()], (path, persona and persona.name)
    logged = server.log.read_text()
    assert "api.fast_lane" not in logged  # the lane was on (not turned off, no endpoint skipped) and never failed

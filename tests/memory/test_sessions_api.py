"""Agent sessions (ordered event logs) and handoffs."""

from __future__ import annotations

import pytest

from memory.models import Claim
from memory.screening import OPEN_MARKER
from tests.conftest import Api, Persona, error_code, issue

pytestmark = pytest.mark.django_db


def new_session(api: Api, persona: Persona) -> str:
    response = api.post("/session/create", persona, {"title": "Apollo migration", "agent": "claude-code"})
    assert response.status_code == 201
    return str(response.json()["session"]["sessionId"])


def test_events_are_numbered_in_order_and_paged(api: Api, owner: Persona) -> None:
    session = new_session(api, owner)
    for n in range(5):
        event = api.post("/session/append-event", owner, {"sessionId": session, "kind": "step", "payload": {"n": n}})
        assert event.json()["event"]["sequence"] == n + 1
    page = api.post("/session/events", owner, {"sessionId": session, "afterSequence": 2, "limit": 2}).json()
    assert [e["sequence"] for e in page["events"]] == [3, 4]
    assert page["events"][0]["payload"].startswith(OPEN_MARKER)
    assert api.post("/session/get", owner, {"sessionId": session}).json()["session"]["events"] == 5
    assert [s["sessionId"] for s in api.post("/session/list", owner).json()["sessions"]] == [session]


@pytest.mark.django_db(transaction=True)
def test_handoffs_are_saved_loaded_and_listed(api: Api, owner: Persona) -> None:
    body = {"topic": "apollo", "summary": "Schema done.", "nextSteps": ["Copy data"], "eventId": "h1"}
    ack = api.post("/handoff/save", owner, body).json()
    assert (ack["deduplicated"], ack["verified_persisted"]) == (False, True)
    assert api.post("/handoff/save", owner, body).json()["deduplicated"] is True
    api.post("/handoff/save", owner, {"topic": "hermes", "summary": "Started.", "nextSteps": []})
    loaded = api.post("/handoff/load", owner, {"topic": "apollo"}).json()["handoff"]
    assert "Schema done." in loaded["value"] and loaded["kind"] == "handoff"
    newest = api.post("/handoff/load", owner).json()["handoff"]
    assert newest["key"] == "handoff/hermes"
    assert [h["key"] for h in api.post("/handoff/list", owner).json()["handoffs"]] == [
        "handoff/apollo",
        "handoff/hermes",
    ]
    assert Claim.objects.filter(kind="handoff").count() == 2


def test_no_handoff_is_not_found(api: Api, owner: Persona) -> None:
    assert error_code(api.post("/handoff/load", owner)) == "NOT_FOUND"


def test_other_users_and_scopes(api: Api, owner: Persona, other: Persona, alice) -> None:
    session = new_session(api, owner)
    for path, body in [
        ("/session/get", {"sessionId": session}),
        ("/session/events", {"sessionId": session}),
        ("/session/append-event", {"sessionId": session, "kind": "x", "payload": 1}),
    ]:
        assert error_code(api.post(path, other, body)) == "NOT_FOUND", path
    assert api.post("/session/list", other).json()["sessions"] == []
    reader = issue(alice, "reader", scopes=["read"])
    assert error_code(api.post("/session/create", reader, {})) == "SCOPE_REQUIRED"
    appended = api.post("/session/append-event", reader, {"sessionId": session, "kind": "x", "payload": 1})
    assert error_code(appended) == "SCOPE_REQUIRED"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [("/session/append-event", {"sessionId": "ses_x", "payload": 1}, "kind"),
     ("/session/events", {"sessionId": "ses_x", "afterSequence": -1}, "afterSequence"),
     ("/handoff/save", {"topic": "t"}, "summary"), ("/handoff/save", {"summary": "s"}, "topic")],
)  # fmt: skip
def test_malformed_session_and_handoff_calls(api: Api, owner: Persona, path: str, body: dict, field: str) -> None:
    response = api.post(path, owner, body)
    assert response.status_code == 400
    assert field in response.json()["error"]["details"]

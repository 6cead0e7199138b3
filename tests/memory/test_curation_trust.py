"""coord_curate: whose words an event is (an agent's token cannot raise its text to the user's word) and the
session lock held only for the writes, never across an extractor call (issue 12, item 11)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction

from memory.access import access_for_user
from memory.models import AgentSession, Claim, User
from memory.services.curation import session_curate
from memory.services.sessions import session_append_event
from tests.conftest import Api, Persona
from tests.fake_llm import FakeLLM, fake_llm


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code < 300, response.content
    return dict(response.json())


def new_session(api: Api, persona: Persona) -> str:
    created = ok(api.post("/session/create", persona, {"title": "Apollo", "agent": "claude-code"}))
    return str(created["session"]["sessionId"])


def append(api: Api, persona: Persona, session: str, kind: str, payload: dict[str, Any]) -> None:
    ok(api.post("/session/append-event", persona, {"sessionId": session, "kind": kind, "payload": payload}))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("user_message", {"text": "I prefer dark roast coffee. I will send the budget to Marcel by Friday."}),
        ("relay", {"role": "user", "text": "I prefer dark roast coffee. I will send the budget to Marcel by Friday."}),
    ],
)
def test_events_sent_with_a_token_are_assistant_inferred_whatever_role_they_claim(
    api: Api, owner: Persona, kind: str, payload: dict[str, Any]
) -> None:
    session = new_session(api, owner)
    append(api, owner, session, kind, payload)

    body = ok(api.post("/coord/curate", owner, {"sessionId": session, "dryRun": False}))

    preference = Claim.objects.get(kind="preference")
    assert (preference.statement, preference.origin) == ("Prefers dark roast coffee.", "assistant_inferred")
    assert preference.reason  # the steward's policy wants a reason for every inferred claim
    status = Claim.objects.get(predicate="HAS_TASK_STATUS")
    assert status.origin == "assistant_inferred"  # a candidate commitment, not an open one
    assert ok(api.post("/commitments/open", owner))["commitments"] == []
    assert {claim["origin"] for claim in body["claims"]} == {"assistant_inferred"}


@pytest.mark.django_db
def test_events_the_person_appends_keep_the_role_they_give(alice: User) -> None:
    access = access_for_user(user=alice)
    session = AgentSession.objects.create(owner=alice, partition=access.write_partition(), title="by hand", agent="me")
    said = {"text": "I prefer dark roast coffee."}
    session_append_event(access=access, session_id=session.pk, kind="user_message", payload=said)

    session_curate(access=access, session_id=session.pk, dry_run=False)

    assert Claim.objects.get(kind="preference").origin == "user_stated"


@pytest.fixture
def llm(settings: Any) -> Iterator[FakeLLM]:
    with fake_llm() as server:
        settings.EXTRACTOR, settings.LLM_URL, settings.LLM_MODEL = "llm", server.url, "fake-model"
        settings.LLM_TIMEOUT_S = 5
        yield server


@pytest.mark.django_db(transaction=True)
def test_the_session_is_not_locked_while_the_extractor_is_called(api: Api, owner: Persona, llm: FakeLLM) -> None:
    session = new_session(api, owner)
    append(api, owner, session, "note", {"text": "I prefer dark roast coffee."})
    seen: list[str] = []

    def probe() -> None:
        """Runs on the fake endpoint's thread, with its own database connection, while the call is open."""
        try:
            with transaction.atomic():
                AgentSession.objects.select_for_update(nowait=True).get(pk=session)
            seen.append("free")
        except OperationalError:
            seen.append("locked")
        finally:
            connection.close()

    llm.during.append(probe)
    ok(api.post("/coord/curate", owner, {"sessionId": session, "dryRun": False}))

    assert seen == ["free"]

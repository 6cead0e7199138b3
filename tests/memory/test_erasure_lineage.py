"""Erasing a source erases what was derived from it, and only that: revision chains that run through other
sources are mended, and a task never loses its one status to somebody else's erasure (issue 12, item 1)."""

from __future__ import annotations

from typing import Any

import pytest

from commitments.services import recover_statusless
from memory.access import access_for_user
from memory.models import Claim, Node
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db


def said(api: Api, persona: Persona, conversation: str, text: str, minute: int) -> str:
    """`text` as the only user message of `conversation`, processed at once; returns the conversation's id."""
    body = {"conversation": {"id": conversation, "messages": [
        {"id": f"{conversation}-1", "role": "user", "content": text, "timestamp": f"2026-04-22T10:{minute:02d}:00Z"},
    ]}}  # fmt: skip
    receipt = api.post("/ingest/conversation", persona, body).json()
    run_operation(receipt["operationId"])
    return str(receipt["sourceId"])


def erase(api: Api, persona: Persona, source_id: str) -> None:
    response = api.post("/source/delete", persona, {"sourceId": source_id})
    assert response.status_code == 200, response.json()


def employers() -> dict[str, tuple[str, str | None]]:
    return {
        claim.statement: (claim.status, claim.superseded_by.statement if claim.superseded_by else None)
        for claim in Claim.objects.filter(predicate="WORKS_AT").select_related("superseded_by")
    }


def task_statuses(label: str) -> list[tuple[str, str]]:
    task = Node.objects.get(type="Task", label=label)
    claims = Claim.objects.filter(subject=task, predicate="HAS_TASK_STATUS").order_by("recorded_at", "id")
    return [(str(claim.object_value), claim.status) for claim in claims]


def test_erasing_the_older_source_keeps_the_newer_claim_from_another_source(api: Api, owner: Persona) -> None:
    first = said(api, owner, "a", "I work at Acme.", 1)
    said(api, owner, "b", "I work at Globex.", 2)
    assert employers() == {"Works at Acme.": ("superseded", "Works at Globex."), "Works at Globex.": ("active", None)}
    erase(api, owner, first)
    assert employers() == {"Works at Globex.": ("active", None)}


def test_erasing_the_newer_source_makes_the_older_claim_current_again(api: Api, owner: Persona) -> None:
    said(api, owner, "a", "I work at Acme.", 1)
    second = said(api, owner, "b", "I work at Globex.", 2)
    erase(api, owner, second)
    assert employers() == {"Works at Acme.": ("active", None)}
    assert Claim.objects.get(predicate="WORKS_AT").valid_until is None


def test_erasing_the_middle_of_a_chain_links_its_neighbours(api: Api, owner: Persona) -> None:
    said(api, owner, "a", "I work at Acme.", 1)
    second = said(api, owner, "b", "I work at Globex.", 2)
    said(api, owner, "c", "I work at Initech.", 3)
    erase(api, owner, second)
    assert employers() == {
        "Works at Acme.": ("superseded", "Works at Initech."),
        "Works at Initech.": ("active", None),
    }


def test_a_correction_of_erased_content_goes_with_it(api: Api, owner: Persona) -> None:
    first = said(api, owner, "a", "I work at Acme.", 1)
    acme = Claim.objects.get(statement="Works at Acme.")
    corrected = api.post("/claim/correct", owner, {"claimId": acme.pk, "statement": "Works at Acme Corp."})
    assert corrected.status_code == 200, corrected.json()
    erase(api, owner, first)
    assert not Claim.objects.filter(statement__startswith="Works at Acme").exists()


def test_a_task_completed_in_another_conversation_keeps_its_status_when_the_first_is_erased(
    api: Api, owner: Persona
) -> None:
    first = said(api, owner, "a", "I'll send the spec to Marcel by Friday.", 1)
    said(api, owner, "b", "I sent Marcel the spec.", 2)
    label = Node.objects.get(type="Task").label
    erase(api, owner, first)
    assert task_statuses(label) == [("completed", "active")]


def test_erasing_the_completion_reopens_the_task(api: Api, owner: Persona) -> None:
    said(api, owner, "a", "I'll send the spec to Marcel by Friday.", 1)
    second = said(api, owner, "b", "I sent Marcel the spec.", 2)
    label = Node.objects.get(type="Task").label
    erase(api, owner, second)
    assert task_statuses(label) == [("pending", "active")]
    open_work = api.post("/commitments/open", owner, {}).json()
    assert [item["label"] for item in open_work["commitments"]] == [label], open_work


def test_a_task_known_only_from_the_erased_source_goes_with_it(api: Api, owner: Persona, alice: Any) -> None:
    first = said(api, owner, "a", "I'll send the spec to Marcel by Friday.", 1)
    assert Node.objects.filter(type="Task").count() == 1
    erase(api, owner, first)
    assert not Node.objects.filter(type="Task").exists()
    assert recover_statusless(access_for_user(user=alice), dry_run=True).found == 0


def test_erasing_a_claim_keeps_the_newer_claim_that_superseded_it(api: Api, owner: Persona) -> None:
    said(api, owner, "a", "I work at Acme.", 1)
    said(api, owner, "b", "I work at Globex.", 2)
    acme = Claim.objects.get(statement="Works at Acme.")
    answer = api.post("/claim/delete", owner, {"claimId": acme.pk}).json()
    assert answer == {"claimId": acme.pk, "erasedRevisions": 1}
    assert employers() == {"Works at Globex.": ("active", None)}


def test_erasing_the_current_claim_makes_the_one_it_superseded_current(api: Api, owner: Persona) -> None:
    said(api, owner, "a", "I work at Acme.", 1)
    said(api, owner, "b", "I work at Globex.", 2)
    globex = Claim.objects.get(statement="Works at Globex.")
    api.post("/claim/delete", owner, {"claimId": globex.pk})
    assert employers() == {"Works at Acme.": ("active", None)}


def test_deleting_an_entity_keeps_claims_about_others_that_superseded_its_claims(api: Api, owner: Persona) -> None:
    said(api, owner, "a", "I work at Acme.", 1)
    said(api, owner, "b", "I work at Globex.", 2)
    acme = Node.objects.get(label="Acme")
    response = api.post("/node/delete", owner, {"nodeId": acme.pk})
    assert response.status_code == 200, response.json()
    assert employers() == {"Works at Globex.": ("active", None)}

"""Review decisions on a suggested claim produced by the real pipeline (reconcile's conflict check)."""

from __future__ import annotations

from typing import Any

import pytest

from memory.access import Access, access_for_user
from memory.errors import Conflict, NotFound
from memory.models import Claim, MemoryEvent
from memory.review_queue import review_queue
from memory.services.claims import claim_correct, claim_erase
from memory.services.review import review_accept, review_keep_both, review_keep_old, review_undo
from tests.conftest import Api, Persona
from tests.memory.test_knowledge_pipeline import say

pytestmark = pytest.mark.django_db


def conflict(api: Api, owner: Persona, settings: Any) -> tuple[Claim, Claim]:
    """Two conversations with near-identical likings about one thing: the second is held back as suggested.
    The threshold is the configured one, lowered so the test embedder's vectors of the two count as close."""
    settings.STEWARD_CONFLICT_SIMILARITY_PERCENT = 60
    say(api, owner, "I like strong coffee.")
    say(api, owner, "I love iced coffee.")
    old = Claim.objects.get(statement="Likes strong coffee.")
    new = Claim.objects.get(statement="Loves iced coffee.")
    return old, new


def test_reconcile_stores_which_active_claim_a_suggestion_conflicts_with(
    api: Api, owner: Persona, settings: Any
) -> None:
    old, new = conflict(api, owner, settings)
    assert (old.status, new.status, new.conflicts_with_id) == ("active", "suggested", old.pk)
    assert old.conflicts_with_id is None


def access(persona: Persona) -> Access:
    assert persona.user is not None
    return access_for_user(user=persona.user)


def searched(api: Api, owner: Persona) -> list[str]:
    answer = api.post("/query/search", owner, {"query": "coffee"}).json()
    return sorted(result["text"] for result in answer["searchResults"] if result["type"] == "claim")


def review_events(claim: Claim) -> list[tuple[str, Any]]:
    events = MemoryEvent.objects.filter(target_id=claim.pk, action__startswith="review.")
    return [(event.action, event.before) for event in events]


def test_accept_supersedes_the_old_claim_and_search_no_longer_returns_it(
    api: Api, owner: Persona, settings: Any
) -> None:
    old, new = conflict(api, owner, settings)
    assert searched(api, owner) == ["Likes strong coffee."]
    review_accept(access=access(owner), claim_id=new.pk)
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.status, old.superseded_by_id, new.status) == ("superseded", new.pk, "active")
    assert old.valid_until is not None
    assert searched(api, owner) == ["Loves iced coffee."]
    assert review_events(new) == [
        ("review.accept", {"status": "suggested", "conflictsWith": old.pk, "oldValidUntil": ""})
    ]


def test_keep_old_retracts_the_suggestion(api: Api, owner: Persona, settings: Any) -> None:
    old, new = conflict(api, owner, settings)
    review_keep_old(access=access(owner), claim_id=new.pk)
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.status, new.status) == ("active", "retracted")
    assert searched(api, owner) == ["Likes strong coffee."]
    assert [action for action, _ in review_events(new)] == ["review.keep_old"]


def test_keep_both_makes_the_suggestion_active_next_to_the_old(api: Api, owner: Persona, settings: Any) -> None:
    old, new = conflict(api, owner, settings)
    review_keep_both(access=access(owner), claim_id=new.pk)
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.status, new.status, old.superseded_by_id) == ("active", "active", None)
    assert searched(api, owner) == ["Likes strong coffee.", "Loves iced coffee."]
    assert [action for action, _ in review_events(new)] == ["review.keep_both"]


@pytest.mark.parametrize("decide", [review_accept, review_keep_old, review_keep_both])
def test_a_claim_not_waiting_for_review_is_refused(api: Api, owner: Persona, settings: Any, decide: Any) -> None:
    old, new = conflict(api, owner, settings)
    with pytest.raises(Conflict):
        decide(access=access(owner), claim_id=old.pk)
    review_keep_both(access=access(owner), claim_id=new.pk)
    with pytest.raises(Conflict):  # decided once: a second click does nothing
        decide(access=access(owner), claim_id=new.pk)


@pytest.mark.parametrize("decide", [review_accept, review_keep_old, review_keep_both])
def test_another_persons_suggestion_is_not_found(
    api: Api, owner: Persona, other: Persona, settings: Any, decide: Any
) -> None:
    _, new = conflict(api, owner, settings)
    with pytest.raises(NotFound):
        decide(access=access(other), claim_id=new.pk)
    new.refresh_from_db()
    assert new.status == "suggested"


def test_erasing_the_old_claim_unlinks_the_suggestion(api: Api, owner: Persona, settings: Any) -> None:
    old, new = conflict(api, owner, settings)
    claim_erase(access=access(owner), claim_id=old.pk)
    new.refresh_from_db()
    assert (new.status, new.conflicts_with_id) == ("suggested", None)
    review_accept(access=access(owner), claim_id=new.pk)  # nothing left to supersede: it simply becomes active
    new.refresh_from_db()
    assert new.status == "active"


def test_an_accept_is_undone_by_erasing_the_accepted_claim(api: Api, owner: Persona, settings: Any) -> None:
    """The way back the claim page offers: erase (or correct) the accepted claim; the old one is current again."""
    old, new = conflict(api, owner, settings)
    review_accept(access=access(owner), claim_id=new.pk)
    claim_erase(access=access(owner), claim_id=new.pk)
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id) == ("active", None)


@pytest.mark.parametrize("decide", [review_accept, review_keep_old, review_keep_both])
def test_undo_puts_back_exactly_what_the_decision_changed(api: Api, owner: Persona, settings: Any, decide: Any) -> None:
    old, new = conflict(api, owner, settings)
    decide(access=access(owner), claim_id=new.pk)
    review_undo(access=access(owner), claim_id=new.pk)
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.status, old.superseded_by_id, old.valid_until) == ("active", None, None)
    assert (new.status, new.valid_until, new.conflicts_with_id) == ("suggested", None, old.pk)
    assert searched(api, owner) == ["Likes strong coffee."]
    assert [action for action, _ in review_events(new)] == ["review.undo", decide.__name__.replace("_", ".", 1)]
    with pytest.raises(Conflict):  # taken back once: a second undo has nothing to take back
        review_undo(access=access(owner), claim_id=new.pk)
    review_accept(access=access(owner), claim_id=new.pk)  # and the suggestion can be decided again
    old.refresh_from_db()
    assert old.status == "superseded"


def test_undo_is_refused_once_the_claims_changed_since(api: Api, owner: Persona, settings: Any) -> None:
    old, new = conflict(api, owner, settings)
    review_accept(access=access(owner), claim_id=new.pk)
    claim_correct(access=access(owner), claim_id=new.pk, statement="Loves iced coffee with oat milk.")
    with pytest.raises(Conflict):  # the accepted claim was corrected: a newer revision holds
        review_undo(access=access(owner), claim_id=new.pk)
    old.refresh_from_db()
    assert old.status == "superseded"
    with pytest.raises(Conflict):  # never decided
        review_undo(access=access(owner), claim_id=old.pk)


def test_another_person_cannot_undo_a_decision(api: Api, owner: Persona, other: Persona, settings: Any) -> None:
    _, new = conflict(api, owner, settings)
    review_keep_old(access=access(owner), claim_id=new.pk)
    with pytest.raises(NotFound):
        review_undo(access=access(other), claim_id=new.pk)
    new.refresh_from_db()
    assert new.status == "retracted"


def test_the_queue_counts_every_waiting_claim_beyond_the_ones_it_shows(
    api: Api, owner: Persona, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    conflict(api, owner, settings)
    shown = review_queue(access(owner))
    assert (shown.counts["suggestions"], len(shown.suggestions)) == (1, 1)
    monkeypatch.setattr("memory.review_queue.LIMIT", 0)  # a page smaller than what waits
    queue = review_queue(access(owner))
    assert (queue.counts["suggestions"], queue.suggestions) == (1, [])


def test_a_suggestion_follows_the_claim_it_conflicts_with_through_a_correction(
    api: Api, owner: Persona, settings: Any
) -> None:
    old, new = conflict(api, owner, settings)
    corrected = claim_correct(access=access(owner), claim_id=old.pk, statement="Likes strong black coffee.")
    (shown,) = review_queue(access(owner)).suggestions
    assert (
        shown.conflicts_with is not None and shown.conflicts_with.pk == corrected.pk
    )  # the review shows it beside the claim as it reads now
    review_accept(access=access(owner), claim_id=new.pk)
    corrected.refresh_from_db()
    assert (corrected.status, corrected.superseded_by_id) == ("superseded", new.pk)
    assert searched(api, owner) == ["Loves iced coffee."]
    review_undo(access=access(owner), claim_id=new.pk)
    corrected.refresh_from_db()
    assert (corrected.status, corrected.superseded_by_id) == ("active", None)

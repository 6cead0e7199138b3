"""The commitments board's selector (every open task in the digest's buckets, plus undated ones and the
candidates, with the people each names and where it was said) and the manual due date (`commitment_reschedule`)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from commitments.selectors import commitment_board, due_buckets, open_commitments
from commitments.services import commitment_reschedule
from memory.access import access_for_user
from memory.errors import NotFound, ValidationFailed
from memory.models import Claim, MemoryEvent, Node, User
from tests.commitments.test_commitments_api import make_task, say
from tests.conftest import Api, Persona
from tests.factories import ClaimFactory, NodeFactory

pytestmark = pytest.mark.django_db

TODAY = date(2026, 3, 29)


def due_claims(task: Node) -> list[tuple[Any, str, str]]:
    claims = Claim.objects.filter(subject=task, predicate="DUE_ON").order_by("recorded_at", "id")
    return [(claim.object_value, claim.status, claim.origin) for claim in claims]


def task_named(label: str) -> Node:
    return Node.objects.get(type="Task", label=label)


# The board ------------------------------------------------------------------------------------------


@pytest.fixture
def board_tasks(alice: User) -> dict[str, Node]:
    hugo = NodeFactory.create(owner=alice, type="Person", label="Hugo")
    return {
        "hugo": hugo,
        "late": make_task(alice, "Water the plants", due="2026-03-28"),
        "today": make_task(alice, "Call the bank", due="2026-03-29"),
        "soon": make_task(alice, "Send the spec", due="2026-03-30", status="in_progress"),
        "far": make_task(alice, "Renew passport", due="2026-09-10", owned_by=hugo),  # beyond the digest's week
        "undated": make_task(alice, "Write the report"),
        "candidate": make_task(alice, "Read the contract", due="2026-03-29", origin="assistant_inferred"),
        "done": make_task(alice, "Fix the gate", due="2026-03-29", status="completed"),
    }


def columns(board: Any) -> dict[str, list[str]]:
    return {name: [card.task.label for card in cards] for name, cards in board.columns.items()}


def test_the_board_has_every_open_task_in_a_column_and_the_candidates_apart(
    alice: User, board_tasks: dict[str, Node]
) -> None:
    board = commitment_board(access_for_user(user=alice), today=TODAY)
    assert columns(board) == {
        "overdue": ["Water the plants"],
        "dueToday": ["Call the bank"],
        "upcoming": ["Send the spec", "Renew passport"],
        "undated": ["Write the report"],
    }
    assert [card.task.label for card in board.candidates] == ["Read the contract"]
    assert [person.label for person in board.owners] == ["Hugo"]


def test_the_board_uses_the_digests_buckets(alice: User, board_tasks: dict[str, Node]) -> None:
    """The digest is unchanged: undated and far-off tasks stay out of it unless asked for."""
    tasks = open_commitments(access_for_user(user=alice))
    digest = {name: [item.task.label for item in items] for name, items in due_buckets(tasks, TODAY, 7).items()}
    assert digest == {"overdue": ["Water the plants"], "dueToday": ["Call the bank"], "upcoming": ["Send the spec"]}
    everything = due_buckets(tasks, TODAY, None, undated=True)
    assert [item.task.label for item in everything["upcoming"]] == ["Send the spec", "Renew passport"]
    assert [item.task.label for item in everything["undated"]] == ["Write the report"]


def test_the_board_filters_by_owner(alice: User, board_tasks: dict[str, Node]) -> None:
    access = access_for_user(user=alice)
    mine = commitment_board(access, today=TODAY, owner="me")
    assert columns(mine) == {
        "overdue": ["Water the plants"], "dueToday": ["Call the bank"], "upcoming": ["Send the spec"],
        "undated": ["Write the report"],
    }  # fmt: skip
    assert [card.task.label for card in mine.candidates] == ["Read the contract"]
    hugos = commitment_board(access, today=TODAY, owner=board_tasks["hugo"].pk)
    assert columns(hugos) == {"overdue": [], "dueToday": [], "upcoming": ["Renew passport"], "undated": []}
    assert hugos.candidates == []
    assert [person.label for person in hugos.owners] == ["Hugo"]  # the filter's choices stay


def test_a_card_names_the_people_the_task_mentions_and_where_it_was_said(api: Api, owner: Persona, alice: User) -> None:
    say(api, owner, "I'll send the spec to Marcel by Friday.")
    task = task_named("Send the spec to Marcel")
    access = access_for_user(user=alice)
    commitment_reschedule(access, task.pk, due_on=date(2026, 4, 30))  # a manual claim: no evidence of its own
    (card,) = commitment_board(access, today=date(2026, 4, 22)).columns["upcoming"]
    assert [person.label for person in card.mentions] == ["Marcel"]
    assert card.said is not None
    assert (card.said.message_id, card.said.excerpt) == ("chat-m0", "I'll send the spec to Marcel by Friday.")
    assert card.said.source.parent_id is not None  # said in a message of a conversation


def test_the_board_costs_the_same_queries_for_many_tasks(alice: User, django_assert_num_queries: Any) -> None:
    for n in range(3):
        make_task(alice, f"Task {n}", due=f"2026-04-0{n + 1}")
    access = access_for_user(user=alice)
    with django_assert_num_queries(5) as few:
        commitment_board(access, today=TODAY)
    for n in range(3, 12):
        task = make_task(alice, f"Task {n}", due=f"2026-04-{n + 1:02d}")
        ClaimFactory.create(owner=alice, subject=task, predicate="MENTIONS", statement="names Anna",
                            object_node=NodeFactory.create(owner=alice, type="Person", label=f"Anna {n}"))  # fmt: skip
    with django_assert_num_queries(len(few.captured_queries)):
        commitment_board(access, today=TODAY)


# Reschedule -----------------------------------------------------------------------------------------


def test_rescheduling_makes_a_manual_due_date_that_later_messages_do_not_move(
    api: Api, owner: Persona, alice: User
) -> None:
    say(api, owner, "I'll send the spec to Marcel by Friday.")
    task = task_named("Send the spec to Marcel")
    claim = commitment_reschedule(access_for_user(user=alice), task.pk, due_on=date(2026, 5, 8))
    assert (claim.object_value, claim.origin, claim.status, claim.subject_id) == (
        "2026-05-08", "manual", "active", task.pk
    )  # fmt: skip
    assert due_claims(task) == [("2026-04-24", "superseded", "user_stated"), ("2026-05-08", "active", "manual")]
    assert Claim.objects.get(subject=task, predicate="DUE_ON", status="superseded").superseded_by_id == claim.pk
    event = MemoryEvent.objects.get(action="task.reschedule", target_id=task.pk)
    assert (event.before, event.after) == ({"dueOn": "2026-04-24"}, {"dueOn": "2026-05-08", "claimId": claim.pk})
    say(api, owner, "I'll send the spec to Marcel by 2026-05-01.", conversation="later")
    assert due_claims(task)[-1] == ("2026-05-08", "active", "manual")
    (item,) = open_commitments(access_for_user(user=alice))
    assert item.due_on == date(2026, 5, 8)


def test_an_undated_task_gets_its_first_due_date(alice: User) -> None:
    task = make_task(alice, "Write the report")
    commitment_reschedule(access_for_user(user=alice), task.pk, due_on=date(2026, 4, 2))
    assert due_claims(task) == [("2026-04-02", "active", "manual")]
    assert MemoryEvent.objects.get(action="task.reschedule", target_id=task.pk).before == {"dueOn": None}


def test_the_same_date_again_writes_nothing(alice: User) -> None:
    task = make_task(alice, "Write the report")
    access = access_for_user(user=alice)
    first = commitment_reschedule(access, task.pk, due_on=date(2026, 4, 2))
    assert commitment_reschedule(access, task.pk, due_on=date(2026, 4, 2)).pk == first.pk
    assert MemoryEvent.objects.filter(action="task.reschedule", target_id=task.pk).count() == 1


def test_another_persons_task_or_a_node_that_is_no_task_is_not_found(alice: User, bob: User) -> None:
    task = make_task(alice, "Write the report")
    with pytest.raises(NotFound):
        commitment_reschedule(access_for_user(user=bob), task.pk, due_on=date(2026, 4, 2))
    person = NodeFactory.create(owner=alice, type="Person", label="Hugo")
    with pytest.raises(NotFound):
        commitment_reschedule(access_for_user(user=alice), person.pk, due_on=date(2026, 4, 2))
    assert due_claims(task) == []


def test_an_implausible_date_is_refused(alice: User) -> None:
    task = make_task(alice, "Write the report")
    with pytest.raises(ValidationFailed):
        commitment_reschedule(access_for_user(user=alice), task.pk, due_on=date(3026, 4, 2))
    assert due_claims(task) == []

"""The rules extractor, sentence by sentence: what each statement of the owner becomes."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memory.extraction.base import Extraction, TextUnit
from memory.extraction.rules import RulesExtractor

SAID_ON = datetime(2026, 4, 22, 10, 0, tzinfo=UTC)  # a Wednesday
FRIDAY, THURSDAY, TOMORROW = date(2026, 4, 24), date(2026, 4, 23), date(2026, 4, 23)


def extract(text: str, role: str = "user", zone: str = "UTC", when: datetime = SAID_ON) -> Extraction:
    return RulesExtractor().extract(
        [TextUnit(source_id="src_1", text=text, role=role, authored_at=when)], timezone_name=zone
    )


@pytest.mark.parametrize(
    ("text", "kind", "statement", "predicate", "target"),
    [
        ("I prefer morning meetings.", "preference", "Prefers morning meetings.", "PREFERS:meeting", None),
        ("I really like green tea", "preference", "Likes green tea.", "PREFERS:tea", None),
        ("I don't like long calls.", "preference", "Does not like long calls.", "PREFERS:call", None),
        ("I work at Acme Corp.", "fact", "Works at Acme Corp.", "WORKS_AT", "Acme Corp"),
        ("I live in Utrecht.", "fact", "Lives in Utrecht.", "LIVES_IN", "Utrecht"),
        ("My manager is Sophie.", "fact", "Sophie is the user's manager.", "RELATED_TO", "Sophie"),
        ("We decided to use PostgreSQL.", "decision", "We decided to use PostgreSQL.", "", None),
        ("We agreed that releases happen on Mondays.", "agreement", "We agreed that releases happen on Mondays.",
         "", None),
        ("Always answer in Dutch.", "rule", "Always answer in Dutch.", "", None),
        ("Meeting with Anna on Thursday about the budget.", "working_context",
         "Meeting with Anna on Thursday about the budget.", "MEETS", "Anna"),
    ],
)  # fmt: skip
def test_first_person_statements_become_claims(
    text: str, kind: str, statement: str, predicate: str, target: str | None
) -> None:
    found = extract(text)
    assert [(c.kind, c.statement, c.predicate) for c in found.claims] == [(kind, statement, predicate)]
    claim = found.claims[0]
    assert claim.subject.is_self
    assert (claim.object_node.label if claim.object_node else None) == target
    assert claim.evidence.excerpt == text
    assert claim.evidence.source_id == "src_1"


def test_working_context_expires_after_fourteen_days() -> None:
    assert extract("Follow-up with Ben about the offer.").claims[0].expires_in_days == 14


@pytest.mark.parametrize(
    ("text", "label", "owner", "due"),
    [
        ("I'll send the spec to Marcel by Friday.", "Send the spec", "Marcel", FRIDAY),
        ("I will review the budget before 2026-05-01.", "Review the budget", None, date(2026, 5, 1)),
        ("Remind me to call the dentist tomorrow.", "Call the dentist", None, TOMORROW),
        ("TODO: renew passport", "Renew passport", None, None),
        ("Action item: draft the agenda for Sophie", "Draft the agenda", "Sophie", None),
        ("I need to pay the invoice by May 3rd", "Pay the invoice", None, date(2026, 5, 3)),
        ("Ik zal het rapport uiterlijk vrijdag sturen.", "Het rapport sturen", None, FRIDAY),
        ("Ik ga het rapport vóór vrijdag sturen.", "Het rapport sturen", None, FRIDAY),
        ("Ik moet de offerte sturen, deadline voor donderdag.", "De offerte sturen", None, THURSDAY),
        ("Ik ga het rapport voor vrijdag sturen.", "Het rapport voor vrijdag sturen", None, None),
        ("Ik zal het tegen vrijdag regelen.", "Het tegen vrijdag regelen", None, None),
    ],
)
def test_commitments_become_tasks_with_owner_and_due_date(
    text: str, label: str, owner: str | None, due: date | None
) -> None:
    (task,) = extract(text).tasks
    assert (task.label, task.owner.label if task.owner else None, task.due_on, task.status) == (
        label, owner, due, "pending",
    )  # fmt: skip


def test_due_dates_follow_the_message_time_zone() -> None:
    late_friday_utc = datetime(2026, 4, 23, 23, 30, tzinfo=UTC)  # already Friday in Amsterdam
    (task,) = extract("I'll file the report tomorrow.", zone="Europe/Amsterdam", when=late_friday_utc).tasks
    assert task.due_on == date(2026, 4, 25)
    (task,) = extract("I'll file the report tomorrow.", zone="UTC", when=late_friday_utc).tasks
    assert task.due_on == date(2026, 4, 24)


@pytest.mark.parametrize("text", ["There is no deadline now.", "Er is geen deadline meer."])
def test_removal_wording_clears_a_deadline(text: str) -> None:
    (task,) = extract(text).tasks
    assert task.due_removed is True


@pytest.mark.parametrize(
    ("text", "status", "label"),
    [
        ("I sent Marcel the spec.", "completed", "send Marcel the spec."),
        ("I've finished the budget review", "completed", "finish the budget review"),
        ("No need to book the hotel anymore.", "abandoned", "book the hotel"),
        ("Forget about the newsletter", "abandoned", "the newsletter"),
    ],
)
def test_completion_and_cancellation_target_open_tasks(text: str, status: str, label: str) -> None:
    (task,) = extract(text).tasks
    assert (task.status, task.label) == (status, label)


@pytest.mark.parametrize("role", ["assistant", "system", "other"])
def test_nobody_elses_words_become_facts_about_the_owner(role: str) -> None:
    found = extract("I prefer tea. I'll send the spec to Marcel by Friday.", role=role)
    assert (found.claims, found.tasks) == ([], [])


def test_other_speakers_become_people() -> None:
    found = RulesExtractor().extract([TextUnit(source_id="s", text="Hello", speaker="Marcel", role="other")])
    assert [person.label for person in found.people] == ["Marcel"]


def test_plain_chatter_yields_nothing() -> None:
    found = extract("What a lovely day it was. Thanks for the help!")
    assert (found.claims, found.tasks, found.people) == ([], [], [])


YESTERDAY = datetime(2026, 4, 21, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "readings"),
    [
        ("I weighed 78.2 kg this morning.", [("body_weight", 78.2, "kg", SAID_ON)]),
        ("Weight: 176 lbs", [("body_weight", 79.832, "kg", SAID_ON)]),
        ("Ik woog vanochtend 78,4 kilo.", [("body_weight", 78.4, "kg", SAID_ON)]),
        ("Ran 5 km in 28 minutes today!", [("running_distance", 5.0, "km", SAID_ON),
                                            ("running_duration", 28.0, "min", SAID_ON)]),
        ("I ran 3 miles in 25 mins yesterday", [("running_distance", 4.828, "km", YESTERDAY),
                                                 ("running_duration", 25.0, "min", YESTERDAY)]),
        ("I slept 7.5 hours.", [("sleep_duration", 7.5, "h", SAID_ON)]),
        ("Sliep gisteren 6,5 uur", [("sleep_duration", 6.5, "h", YESTERDAY)]),
        ("Got 8 hours of sleep", [("sleep_duration", 8.0, "h", SAID_ON)]),
        ("Walked 10,000 steps", [("steps", 10000.0, "steps", SAID_ON)]),
        ("My resting heart rate was 52 bpm.", [("resting_heart_rate", 52.0, "bpm", SAID_ON)]),
        ("I swam 1500 m", [("swimming_distance", 1.5, "km", SAID_ON)]),
        ("My son weighs 30 kg.", []),
        ("He ran 10 km.", []),
        ("The meeting is in 5 minutes.", []),
        ("I have 3 kids and 2 cats.", []),
    ],
)  # fmt: skip
def test_numeric_readings_of_the_owner_are_kept_in_canonical_units(
    text: str, readings: list[tuple[str, float, str, datetime]]
) -> None:
    found = extract(text).readings
    assert [(r.metric, r.value, r.unit, r.occurred_at) for r in found] == readings
    assert all(r.evidence.excerpt == text for r in found)


def test_an_assistants_numbers_are_not_readings() -> None:
    assert extract("You weighed 78 kg last week.", role="assistant").readings == []

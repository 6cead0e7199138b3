"""The rules extractor, sentence by sentence: what each statement of the owner becomes."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

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
        ("I'll send the spec to Marcel by Friday.", "Send the spec to Marcel", None, FRIDAY),
        ("I will review the budget before 2026-05-01.", "Review the budget", None, date(2026, 5, 1)),
        ("Remind me to call the dentist tomorrow.", "Call the dentist", None, TOMORROW),
        ("TODO: renew passport", "Renew passport", None, None),
        ("Action item: draft the agenda for Sophie", "Draft the agenda for Sophie", None, None),
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


def test_a_to_do_in_a_document_is_a_candidate_and_its_status_words_change_nothing() -> None:
    units = [
        TextUnit(source_id="doc", text=text, attachment=True, authored_at=SAID_ON)
        for text in ("I'll send the spec to Marcel by Friday.", "I've finished the budget review.",
                     "The demo moved to Thursday.")
    ]  # fmt: skip
    found = RulesExtractor().extract(units)
    assert [(t.label, t.origin, t.status, t.due_on) for t in found.tasks] == [
        ("Send the spec to Marcel", "imported", "pending", FRIDAY),
    ]
    (said,) = extract("I'll send the spec to Marcel by Friday.").tasks
    assert said.origin == "user_stated"


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
        ("I sent Marcel the spec.", "completed", "Marcel the spec"),
        ("I've finished the budget review", "completed", "the budget review"),
        ("No need to book the hotel anymore.", "abandoned", "book the hotel"),
        ("Forget about the newsletter", "abandoned", "the newsletter"),
        ("Scrap the quarterly survey, nobody reads it.", "abandoned", "the quarterly survey"),
        ("Forget the survey, it's pointless.", "abandoned", "the survey"),
        ("I won't renew the lease.", "abandoned", "renew the lease"),
        ("The team dinner has been called off.", "abandoned", "The team dinner"),
        ("Laat maar, de verhuizing gaat niet door.", "abandoned", "de verhuizing"),
        ("Laat de nieuwsbrief maar zitten.", "abandoned", "de nieuwsbrief"),
        ("Pieter returned the borrowed ladder yesterday.", "completed", "the borrowed ladder"),
        ("The insurance claim has been submitted, finally.", "completed", "The insurance claim"),
        ("Het paspoort is verlengd, dat is geregeld.", "completed", "Het paspoort"),
        ("Ik heb de huur al betaald.", "completed", "de huur"),
        ("Bas heeft de ladder teruggebracht.", "completed", "de ladder"),
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


MONDAY = datetime(2026, 4, 20, 10, 0, tzinfo=UTC)
TWO_DAYS_AGO = datetime(2026, 4, 20, 10, 0, tzinfo=UTC)
SATURDAY = datetime(2026, 4, 18, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "readings"),
    [
        # the cue and the number need not touch, and may come in either order
        ("Got on the scales after breakfast: 91.3 kg", [("body_weight", 91.3, "kg", SAID_ON)]),
        ("Weighed myself before the gym, 70,2 kilo", [("body_weight", 70.2, "kg", SAID_ON)]),
        ("Op de weegschaal vanochtend: 66,8 kg", [("body_weight", 66.8, "kg", SAID_ON)]),
        ("Vanochtend woog ik 80,5 kilo.", [("body_weight", 80.5, "kg", SAID_ON)]),
        ("68 kg on the scale today", [("body_weight", 68.0, "kg", SAID_ON)]),
        # a level said of oneself
        ("I'm at 88 kilos now.", [("body_weight", 88.0, "kg", SAID_ON)]),
        ("Finally down to 150 pounds!", [("body_weight", 68.039, "kg", SAID_ON)]),
        ("Ik zit nu op 73 kilo.", [("body_weight", 73.0, "kg", SAID_ON)]),
        ("Ik ben inmiddels 95 kilo", [("body_weight", 95.0, "kg", SAID_ON)]),
        # Dutch puts the participle last; a run may be timed after other words, or as a clock time
        ("Gisteren 12 km gefietst naar mijn werk", [("cycling_distance", 12.0, "km", YESTERDAY)]),
        ("Vanmiddag 8 km hardgelopen in 45 minuten", [("running_distance", 8.0, "km", SAID_ON),
                                                      ("running_duration", 45.0, "min", SAID_ON)]),
        ("Did a 5k around the park before work in 31 minutes", [("running_distance", 5.0, "km", SAID_ON),
                                                                ("running_duration", 31.0, "min", SAID_ON)]),
        ("Ran 21.1 km in 1:58:30 on Monday", [("running_distance", 21.1, "km", MONDAY),
                                               ("running_duration", 118.5, "min", MONDAY)]),
        ("Ran 15 km in 1:20", [("running_distance", 15.0, "km", SAID_ON),
                               ("running_duration", 80.0, "min", SAID_ON)]),
        ("Ran 5 km in 26:30", [("running_distance", 5.0, "km", SAID_ON),
                               ("running_duration", 26.5, "min", SAID_ON)]),
        ("Went running for 40 minutes", [("running_duration", 40.0, "min", SAID_ON)]),
        ("Walked 4 miles with the dog", [("walking_distance", 6.437, "km", SAID_ON)]),
        # sleep, with the number before or after its cue, hours and minutes, and numbers as words
        ("Only slept six hours.", [("sleep_duration", 6.0, "h", SAID_ON)]),
        ("Slept badly, just 4.5 hours", [("sleep_duration", 4.5, "h", SAID_ON)]),
        ("Maar 6u geslapen vannacht", [("sleep_duration", 6.0, "h", YESTERDAY)]),
        ("Eergisteren 8 uur geslapen", [("sleep_duration", 8.0, "h", TWO_DAYS_AGO)]),
        ("Walked 11 km two days ago", [("walking_distance", 11.0, "km", TWO_DAYS_AGO)]),
        ("2 dagen geleden 64,1 kilo gewogen", [("body_weight", 64.1, "kg", TWO_DAYS_AGO)]),
        ("Slept 7h30 last night", [("sleep_duration", 7.5, "h", YESTERDAY)]),
        ("Vandaag 12.000 stappen gezet", [("steps", 12000.0, "steps", SAID_ON)]),
        ("Mijn rustpols was vanochtend 58", [("resting_heart_rate", 58.0, "bpm", SAID_ON)]),
        ("Average heart rate on the ride was 142 bpm", [("heart_rate", 142.0, "bpm", SAID_ON)]),
    ],
)  # fmt: skip
def test_readings_are_found_whatever_the_word_order(
    text: str, readings: list[tuple[str, float, str, datetime]]
) -> None:
    found = extract(text).readings
    assert [(r.metric, r.value, r.unit, r.occurred_at) for r in found] == readings


@pytest.mark.parametrize(
    "text",
    [
        # someone else's numbers
        "My daughter weighs 24 kg.",
        "Mijn vader woog 102 kilo.",
        "Sanne ran 8 km this morning.",
        "Gisteren liep Sanne 8 km.",
        "The suitcase weighed 23 kg.",
        "Weighed the parcel: 4 kg",
        "Our dog slept 14 hours.",
        # goals, plans, hypotheses, questions, habits and the past
        "I want to get down to 70 kg.",
        "Mijn doel is 70 kilo.",
        "If I weighed 90 kg I would worry.",
        "Als ik 90 kilo woog, zou ik stoppen.",
        "I'd love to run 42 km one day.",
        "Tomorrow I will run 10 km.",
        "Should I sleep 9 hours?",
        "I usually sleep 7 hours.",
        "I walk 10,000 steps a day.",
        "I was 110 kg two years ago.",
        # a change is not a level
        "Lost 3 kg this month!",
        "Weer 2 kilo afgevallen.",
        "Another 4 pounds gone.",
        "Suppose I weigh 100 kg, then what.",
        "Imagine I ran 30 km.",
        "Femke zegt dat ze 9 uur heeft geslapen.",
        "Joost said he ran 12 km.",
        "Ik sliep pas om 1 uur.",
        "Total weight loss of 12 kg since January.",
        "Een gewichtsverlies van 6 kilo.",
        "Two pounds lighter than last week.",
    ],
)
def test_numbers_that_are_not_the_owners_current_readings_are_left_out(text: str) -> None:
    assert extract(text).readings == []


def test_a_weight_with_its_change_keeps_only_the_level() -> None:
    found = extract("Weighed in at 79,6 kg today, 1,2 kg minder dan vorige week.").readings
    assert [(r.metric, r.value) for r in found] == [("body_weight", 79.6)]


def test_the_owners_weight_after_someone_elses_in_one_sentence_is_kept() -> None:
    found = extract("My son weighs 28 kg now and I'm at 84 kg.").readings
    assert [(r.metric, r.value) for r in found] == [("body_weight", 84.0)]


@pytest.mark.parametrize(
    ("text", "readings"),
    [
        ("Finished the half marathon in 1:49:20!", [("running_distance", 21.097, "km", SAID_ON),
                                                    ("running_duration", 109.333, "min", SAID_ON)]),
        ("Vandaag de marathon uitgelopen", [("running_distance", 42.195, "km", SAID_ON)]),
        ("Up to 85 kg again, ugh.", [("body_weight", 85.0, "kg", SAID_ON)]),
        ("My sister and I walked 9 km.", [("walking_distance", 9.0, "km", SAID_ON)]),
        ("Ik heb 7 uur en 15 minuten geslapen.", [("sleep_duration", 7.25, "h", SAID_ON)]),
        # the time word of the owner's own clause counts, not another clause's
        ("Yesterday was a rest day, but this morning I ran 6 km.", [("running_distance", 6.0, "km", SAID_ON)]),
    ],
)  # fmt: skip
def test_races_joint_efforts_and_clause_times(text: str, readings: list[tuple[str, float, str, datetime]]) -> None:
    found = extract(text).readings
    assert [(r.metric, r.value, r.unit, r.occurred_at) for r in found] == readings


@pytest.mark.parametrize(
    "text",
    [
        "When I was twenty I weighed 65 kg.",
        "Toen ik studeerde woog ik 65 kilo.",
        "I have to run 8 km tomorrow.",
        "Morgen 20 km fietsen.",
        "Gisteren liep ze 12 km.",
        "The flight is 9 hours, I'll sleep on the plane.",
        "Weight went -2 kg this week.",
        "I want to run a marathon.",
    ],
)
def test_the_past_the_future_and_other_subjects_are_not_readings(text: str) -> None:
    assert extract(text).readings == []


@pytest.mark.parametrize(
    ("text", "readings"),
    [
        ("Pieter cycled 40 km and I cycled 25 km.", [("cycling_distance", 25.0, "km", SAID_ON)]),
        ("Ik heb 12 km in 61 minuten hardgelopen.", [("running_distance", 12.0, "km", SAID_ON),
                                                   ("running_duration", 61.0, "min", SAID_ON)]),
        ("Zaterdag 90 km in 3:10:00 gefietst", [("cycling_distance", 90.0, "km", SATURDAY),
                                               ("cycling_duration", 190.0, "min", SATURDAY)]),
        ("Ik heb slecht geslapen, maar 4 uur.", [("sleep_duration", 4.0, "h", SAID_ON)]),
        ("Dropped to 83.5 kg this week!", [("body_weight", 83.5, "kg", SAID_ON)]),
        ("8000 steps today; 12,000 steps is the goal.", [("steps", 8000.0, "steps", SAID_ON)]),
    ],
)  # fmt: skip
def test_a_cue_pairs_only_with_a_number_in_its_own_clause(
    text: str, readings: list[tuple[str, float, str, datetime]]
) -> None:
    found = extract(text).readings
    assert [(r.metric, r.value, r.unit, r.occurred_at) for r in found] == readings


@pytest.mark.parametrize(
    ("text", "readings"),
    [
        ("Emma weighs 60 kg, I weigh 70 kg.", [("body_weight", 70.0, "kg", SAID_ON)]),
        # a weight cue with a bare number is in kilograms, where no pound value could be meant
        ("My weight this morning was 81.7.", [("body_weight", 81.7, "kg", SAID_ON)]),
        ("Weegschaal gaf vanochtend 79,9 aan.", [("body_weight", 79.9, "kg", SAID_ON)]),
        ("I weigh 172 now.", []),
        ("Weighed myself 3 times this week.", []),
        ("Ik wou dat ik 8 uur had geslapen.", []),
    ],
)  # fmt: skip
def test_clauses_after_a_comma_bare_weights_and_wishes(
    text: str, readings: list[tuple[str, float, str, datetime]]
) -> None:
    found = extract(text).readings
    assert [(r.metric, r.value, r.unit, r.occurred_at) for r in found] == readings


SAT_25 = datetime(2026, 4, 25, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "when", "label", "due"),
    [
        ("I'll water the plants this Friday.", MONDAY, "Water the plants", date(2026, 4, 24)),
        ("I'll water the plants next Friday.", MONDAY, "Water the plants", date(2026, 5, 1)),
        ("I'll mail the form by next Monday.", SAT_25, "Mail the form", date(2026, 4, 27)),
        ("I need to renew the lease by the end of the month.", MONDAY, "Renew the lease", date(2026, 4, 30)),
        ("I have to pay the contractor by end of June.", MONDAY, "Pay the contractor", date(2026, 6, 30)),
        ("Ik moet eind mei de aangifte doen.", MONDAY, "De aangifte doen", date(2026, 5, 31)),
        ("I'll hang the shelves in two weeks.", MONDAY, "Hang the shelves", date(2026, 5, 4)),
        ("Ik ga over drie dagen de tuin maaien.", MONDAY, "De tuin maaien", date(2026, 4, 23)),
        ("Ik moet volgende week woensdag de auto ophalen.", SAT_25, "De auto ophalen", date(2026, 4, 29)),
        ("Ik moet volgende week woensdag de auto ophalen.", MONDAY, "De auto ophalen", date(2026, 4, 29)),
        (
            "Ik moet uiterlijk maandag het formulier invullen.",
            SAT_25,
            "Het formulier invullen",
            date(2026, 4, 27),
        ),
        ("I'll return the keys on 12 June 2026.", MONDAY, "Return the keys", date(2026, 6, 12)),
        ("I'll return the keys on June 12th.", MONDAY, "Return the keys", date(2026, 6, 12)),
    ],
)
def test_day_phrases_follow_the_date_conventions(text: str, when: datetime, label: str, due: date) -> None:
    (task,) = extract(text, when=when).tasks
    assert (task.label, task.due_on) == (label, due)


@pytest.mark.parametrize(
    ("text", "tasks", "people"),
    [
        # The owner's own task, even when it names a recipient: the recipient is a linked person.
        ("I'll mail the contract to Vera tomorrow.", [("Mail the contract to Vera", None, TOMORROW)], ["Vera"]),
        ("Ik stuur de foto's morgen naar Lotte.", [("Stuur de foto's naar Lotte", None, TOMORROW)], ["Lotte"]),
        ("Donderdag bel ik de verhuurder.", [("Bel de verhuurder", None, THURSDAY)], []),
        # Asking someone is the owner's task.
        ("Ask Pieter to fix the gate before Friday.", [("Ask Pieter to fix the gate", None, FRIDAY)], ["Pieter"]),
        ("Ik moet Lotte vragen om de sleutels.", [("Lotte vragen om de sleutels", None, None)], ["Lotte"]),
        # Someone else's promise is theirs.
        ("Hugo will repair the bike by Friday, so we can ride.", [("Repair the bike", "Hugo", FRIDAY)], ["Hugo"]),
        ("Nina, our accountant, promised to file the return.", [("File the return", "Nina", None)], ["Nina"]),
        ("Daan zal morgen de taart halen.", [("De taart halen", "Daan", TOMORROW)], ["Daan"]),
        ("Hugo promised he would fix the gate.", [("Fix the gate", "Hugo", None)], ["Hugo"]),
        (
            "Femke said she'd book the restaurant for Saturday.",
            [("Book the restaurant", "Femke", FRIDAY + timedelta(days=1))],
            ["Femke"],
        ),
        ("Eva zegt dat ze morgen de taart haalt.", [("De taart haalt", "Eva", TOMORROW)], ["Eva"]),
        ("Eva heeft beloofd dat ze vrijdag de foto's deelt.", [("De foto's deelt", "Eva", FRIDAY)], ["Eva"]),
        # One task per commitment.
        (
            "I'll book the venue by Thursday, and Hugo will print the flyers by Friday.",
            [("Book the venue", None, THURSDAY), ("Print the flyers", "Hugo", FRIDAY)],
            ["Hugo"],
        ),
        ("I promised Nina I'd proofread her essay.", [("Proofread her essay", None, None)], ["Nina"]),
        ("We need to repaint the fence by Friday.", [("Repaint the fence", None, FRIDAY)], []),
        ("Note to self: buy a gift for Nina before Friday.", [("Buy a gift for Nina", None, FRIDAY)], ["Nina"]),
        ("Don't forget to water the plants tomorrow.", [("Water the plants", None, TOMORROW)], []),
        ("Can you remind me to water the plants tomorrow?", [("Water the plants", None, TOMORROW)], []),
        ("Vergeet niet om morgen de planten water te geven.", [("De planten water te geven", None, TOMORROW)], []),
        ("I'll try to finish the essay by Friday.", [("Finish the essay", None, FRIDAY)], []),
        # Plans of other people, states, questions and wishes are not tasks (the people named still are people).
        ("I'll be in Rome next week.", [], []),
        ("I'll manage.", [], []),
        ("Maybe I'll repaint the shed on Friday.", [], []),
        ("Misschien ga ik morgen de schuur verven.", [], []),
        ("If it stops raining, I'll mow the lawn.", [], []),
        ("Hugo will move to Lisbon next spring.", [], ["Hugo"]),
        ("Ik zie je morgen.", [], []),
        ("Hugo is going to sell his car.", [], ["Hugo"]),
        ("Mijn zus Eva gaat in mei naar Japan.", [], ["Eva"]),
        ("Should I repaint the kitchen on Friday?", [], []),
        ("If I had time, I would learn the cello.", [], []),
    ],
)
def test_each_commitment_has_its_owner_and_links_the_people_it_names(
    text: str, tasks: list[tuple[str, str | None, date | None]], people: list[str]
) -> None:
    found = extract(text)
    assert [(t.label, t.owner.label if t.owner else None, t.due_on, t.status) for t in found.tasks] == [
        (*task, "pending") for task in tasks
    ]
    assert sorted({person.label for person in found.people}) == people


@pytest.mark.parametrize(
    ("text", "linked"),
    [
        ("I'll mail the contract to Vera tomorrow.", [["Vera"]]),
        ("Ask Pieter to fix the gate before Friday.", [["Pieter"]]),
        ("I promised Nina I'd proofread her essay.", [["Nina"]]),
        ("Ik moet Lotte vragen om de sleutels.", [["Lotte"]]),
        ("Hugo will repair the bike by Friday, so we can ride.", [[]]),  # the owner is no mention
        ("I'll call Anna Tuesday about the keys.", [["Anna"]]),
        ("I'll book the venue by Thursday, and Hugo will print the flyers for Vera.", [[], ["Vera"]]),
    ],
)
def test_a_task_links_the_people_it_names_besides_its_owner(text: str, linked: list[list[str]]) -> None:
    assert [[person.label for person in task.people] for task in extract(text).tasks] == linked


@pytest.mark.parametrize(
    ("text", "label", "due"),
    [
        ("Heads up: the workshop moved to Thursday.", "the workshop", THURSDAY),
        ("Push the dentist appointment to 5 May.", "the dentist appointment", date(2026, 5, 5)),
        ("De presentatie is verschoven naar vrijdag.", "De presentatie", FRIDAY),
        ("Good news, the report is now due on 3 June.", "the report", date(2026, 6, 3)),
        ("We moved the retro to 5 May.", "the retro", date(2026, 5, 5)),
        ("We pushed the retro back to 5 May.", "the retro", date(2026, 5, 5)),
        ("The deadline for the essay got extended to 5 May.", "the essay", date(2026, 5, 5)),
        ("De deadline van de scriptie is verschoven naar 5 mei.", "de scriptie", date(2026, 5, 5)),
    ],
)
def test_a_new_day_for_a_named_task_reschedules_it(text: str, label: str, due: date) -> None:
    (task,) = extract(text).tasks
    assert (task.label, task.due_on, task.rescheduled, task.status) == (label, due, True, "pending")


def test_committing_to_cancel_something_is_a_new_task() -> None:
    (task,) = extract("I need to cancel the gym membership.").tasks
    assert (task.label, task.status) == ("Cancel the gym membership", "pending")


def conversation(*turns: tuple[str, str]) -> Extraction:
    return RulesExtractor().extract(
        [TextUnit(source_id=f"m{n}", text=text, role=role, authored_at=SAID_ON) for n, (role, text) in enumerate(turns)]
    )


@pytest.mark.parametrize(
    ("offer", "reply", "tasks"),
    [
        ("Shall I add a reminder for you to renew the insurance by Friday?", "Sure, go ahead.",
         [("Renew the insurance", FRIDAY)]),
        ("Zal ik een taak toevoegen om morgen de band te plakken?", "Ja graag.", [("De band plakken", TOMORROW)]),
        ("Shall I add a reminder for you to renew the insurance by Friday?", "No thanks, I'll manage.", []),
        ("Shall I add a reminder for you to renew the insurance by Friday?", "Maybe later.", []),
        ("You could renew the insurance by Friday.", "Sure.", []),
    ],
)  # fmt: skip
def test_an_assistants_offer_of_a_task_counts_only_when_the_owner_accepts_it(
    offer: str, reply: str, tasks: list[tuple[str, date]]
) -> None:
    found = conversation(("assistant", offer), ("user", reply))
    assert [(t.label, t.due_on) for t in found.tasks] == tasks
    assert all(t.evidence.source_id == "m1" for t in found.tasks)


def test_someone_elses_absence_cancels_nothing() -> None:
    assert extract("Hugo won't make it to the meeting.").tasks == []


@pytest.mark.parametrize(
    ("text", "label", "owner", "due"),
    [
        # Other ways of saying one will or must: "should", "ought to", "gotta", notes to self without "I".
        ("I should renew the car insurance on Friday.", "Renew the car insurance", None, FRIDAY),
        ("I ought to email the landlord tomorrow.", "Email the landlord", None, TOMORROW),
        ("I'd better defrost the freezer by Thursday.", "Defrost the freezer", None, THURSDAY),
        ("Gotta buy stamps tomorrow.", "Buy stamps", None, TOMORROW),
        ("I've gotta return the drill to Omar by Friday.", "Return the drill to Omar", None, FRIDAY),
        ("Need to renew the parking permit by Thursday.", "Renew the parking permit", None, THURSDAY),
        # Asked of the owner by someone else: the owner's own task.
        ("The headteacher asked me to sign the permission slip by Friday.", "Sign the permission slip", None, FRIDAY),
        ("Mijn buurvrouw heeft me gevraagd om morgen de post op te halen.", "De post op te halen", None, TOMORROW),
        # What must happen to the owner's things.
        ("The spare bedroom has to be painted by Friday.", "Spare bedroom has to be painted", None, FRIDAY),
        ("De fietsband moet morgen geplakt worden.", "Fietsband moet geplakt worden", None, TOMORROW),
        # Someone arranging a shared thing is a task of theirs; their own plans are not.
        ("Mijn zwager Ruud gaat morgen de aanhanger regelen.", "De aanhanger regelen", "Ruud", TOMORROW),
        ("Dirk is going to pick up the keys on Friday.", "Pick up the keys", "Dirk", FRIDAY),
    ],
)
def test_more_ways_to_commit_to_a_task(text: str, label: str, owner: str | None, due: date | None) -> None:
    (task,) = extract(text).tasks
    assert (task.label, task.owner.label if task.owner else None, task.due_on, task.status) == (
        label, owner, due, "pending",
    )  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "I should have called her back.",
        "The forecast needs to be sunny for the picnic.",
        "Dirk is going to sell his motorbike on Friday.",
        "Mijn nicht Lies gaat volgend jaar haar eigen zaak beginnen.",
        "Jasper is going to buy a new laptop.",
    ],
)
def test_regrets_states_and_other_peoples_own_plans_are_not_tasks(text: str) -> None:
    assert extract(text).tasks == []


@pytest.mark.parametrize(
    ("text", "status", "label"),
    [
        ("Done with the tax return, it went in this morning.", "completed", "the tax return"),
        ("I'm finally finished with the thank-you cards.", "completed", "the thank-you cards"),
        ("Ik ben klaar met de jaarrekening.", "completed", "de jaarrekening"),
        ("De nieuwe sloten heb ik vanmiddag vervangen.", "completed", "De nieuwe sloten"),
        ("I no longer need to renew the gym pass, I'm moving.", "abandoned", "renew the gym pass"),
        ("We won't have to hire the caterer after all.", "abandoned", "hire the caterer after all"),
        ("Ik hoef de vergunning niet meer aan te vragen.", "abandoned", "de vergunning"),
        ("Laat maar zitten met de schutting, die is prima.", "abandoned", "de schutting"),
    ],
)
def test_more_completion_and_cancellation_wording(text: str, status: str, label: str) -> None:
    (task,) = extract(text).tasks
    assert (task.status, task.label) == (status, label)


@pytest.mark.parametrize(
    ("offer", "reply", "tasks"),
    [
        ("Want me to add a reminder to descale the kettle tomorrow?", "Yes please.",
         [("Descale the kettle", TOMORROW)]),
        ("Would you like me to note a task to book the vet by Friday?", "Okay.", [("Book the vet", FRIDAY)]),
        ("Do you want me to add a to-do to book the vet by Friday?", "No, I'll remember.", []),
    ],
)  # fmt: skip
def test_offers_phrased_as_want_me_to(offer: str, reply: str, tasks: list[tuple[str, date]]) -> None:
    found = conversation(("assistant", offer), ("user", reply))
    assert [(t.label, t.due_on) for t in found.tasks] == tasks


@pytest.mark.parametrize(
    ("text", "label", "owner", "due"),
    [
        # Plans and assignments in other words.
        ("I'm planning to sort the attic boxes on Friday.", "Sort the attic boxes", None, FRIDAY),
        ("I intend to reply to the auditor by Thursday.", "Reply to the auditor", None, THURSDAY),
        ("I've been asked to chair the residents' meeting on Friday.", "Chair the residents' meeting", None, FRIDAY),
        # With a day, "let me", "I want to" and the present progressive are plans.
        ("Let me order the printer ink tomorrow.", "Order the printer ink", None, TOMORROW),
        ("I want to repot the cactus by Friday.", "Repot the cactus", None, FRIDAY),
        ("Tomorrow I'm collecting the new glasses from the optician.",
         "Collecting the new glasses from the optician", None, TOMORROW),
        ("Ik wil donderdag de zolder opruimen.", "De zolder opruimen", None, THURSDAY),
        # Dutch: "dat" and the modal before the verb-last infinitive are no part of the label.
        ("Vergeet niet dat ik morgen de glasbak moet legen.", "De glasbak legen", None, TOMORROW),
        # Someone else doing a shared chore.
        ("Anouk is going to print the flyers on Friday.", "Print the flyers", "Anouk", FRIDAY),
    ],
)  # fmt: skip
def test_plans_with_a_day_and_assignments_are_tasks(text: str, label: str, owner: str | None, due: date) -> None:
    (task,) = extract(text).tasks
    assert (task.label, task.owner.label if task.owner else None, task.due_on) == (label, owner, due)


@pytest.mark.parametrize(
    "text",
    [
        "Let me think about it.",
        "I want to learn the harp.",
        "I'm working from home tomorrow.",
        "I'll think it over.",
        "I'll keep it in mind.",
        "I'll see how the weather is on Friday.",
        "I have to say, the concert was amazing.",
        "I must admit the new layout is better.",
        "I should really drink more water.",
        "We should have dinner together sometime.",
        "Ik zal erover nadenken.",
        "Ik moet zeggen dat de taart heerlijk was.",
    ],
)
def test_manners_of_speaking_wishes_and_resolutions_are_not_tasks(text: str) -> None:
    assert extract(text).tasks == []


def test_a_possessive_of_a_persons_things_names_the_person() -> None:
    found = extract("Remind me to feed Yusuf's cat tomorrow.")
    assert [p.label for p in found.people] == ["Yusuf"]
    assert [p.label for p in extract("I really like Spotify's new app.").people] == []


@pytest.mark.parametrize(
    ("text", "label", "owner", "due"),
    [
        ("I've promised the club to send the membership list by Friday.", "Send the membership list", None, FRIDAY),
        ("I have promised my mother to fix her printer tomorrow.", "Fix her printer", None, TOMORROW),
        ("I still have to pay the window cleaner by Thursday.", "Pay the window cleaner", None, THURSDAY),
        ("I urgently need to reply to the landlord tomorrow.", "Reply to the landlord", None, TOMORROW),
    ],
)  # fmt: skip
def test_promises_to_groups_and_an_adverb_before_the_modal(text: str, label: str, owner: str | None, due: date) -> None:
    (task,) = extract(text).tasks
    assert (task.label, task.owner.label if task.owner else None, task.due_on) == (label, owner, due)


@pytest.mark.parametrize(
    "text",
    [
        "Julia will run the half marathon in spring.",
        "Mijn neef Bas zal volgend jaar in Delft studeren.",
        "Tess will celebrate her birthday in Rome.",
    ],
)
def test_another_persons_races_studies_and_celebrations_are_their_own(text: str) -> None:
    assert extract(text).tasks == []


@pytest.mark.parametrize(
    "text",
    [
        "I'm watching the final tonight.",
        "I'm baking bread tomorrow, just for fun.",
        "Let me know how it went on Friday.",
        "Mijn oma vroeg me om vaker te bellen.",
        "Ik ga zaterdag gezellig wandelen met de buren.",
        "Ik moet even kwijt dat de trein weer laat was.",
        "Gotta love a rainy Sunday.",
        "I should get going, the bus leaves soon.",
        "I should mention that the hotel was lovely.",
    ],
)
def test_leisure_in_the_progressive_and_vague_asks_are_not_tasks(text: str) -> None:
    assert extract(text).tasks == []

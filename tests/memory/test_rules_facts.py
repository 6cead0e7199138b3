"""The rules extractor's facts, clause by clause: whom a claim is about, which people a sentence names, and what
is stored as nothing (hypotheticals, questions, quoted or reported words, past states)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.extraction.base import Extraction, TextUnit
from memory.extraction.rules import RulesExtractor


def extract(text: str, role: str = "user") -> Extraction:
    unit = TextUnit(source_id="src_1", text=text, role=role, authored_at=datetime(2026, 4, 22, 10, tzinfo=UTC))
    return RulesExtractor().extract([unit])


def about(found: Extraction) -> list[tuple[str, str]]:
    return [(claim.subject.label, claim.statement) for claim in found.claims]


@pytest.mark.parametrize(
    ("text", "name", "relation"),
    [
        ("My cousin Wouter is coming over.", "Wouter", "cousin"),
        ("Wouter, my cousin, is coming over.", "Wouter", "cousin"),
        ("My older brother Hendrik has two kids.", "Hendrik", "brother"),
        ("Mijn zus Anouk komt zaterdag langs.", "Anouk", "sister (zus)"),
        ("Mijn buurvrouw Fatma heeft een nieuwe auto.", "Fatma", "neighbour (buurvrouw)"),
        ("Mijn vriendin Eva komt eten.", "Eva", "girlfriend or friend (vriendin)"),
        ("Ahmed is my colleague.", "Ahmed", "colleague"),
    ],
)
def test_a_relation_names_the_person_and_is_a_claim_about_the_user(text: str, name: str, relation: str) -> None:
    found = extract(text)
    assert [person.label for person in found.people] == [name]
    relation_claims = [c for c in found.claims if c.predicate == "RELATED_TO"]
    assert [(c.statement, c.subject.is_self) for c in relation_claims] == [(f"{name} is the user's {relation}.", True)]
    assert relation_claims[0].object_node is not None and relation_claims[0].object_node.label == name


@pytest.mark.parametrize(
    ("text", "who", "statement", "predicate", "target"),
    [
        ("My brother Hendrik lives in Zwolle.", "Hendrik", "Hendrik lives in Zwolle.", "LIVES_IN", "Zwolle"),
        ("Hendrik, my brother, lives in Zwolle now.", "Hendrik", "Hendrik lives in Zwolle.", "LIVES_IN", "Zwolle"),
        ("Mijn zus Anouk woont in Breda.", "Anouk", "Anouk lives in Breda.", "LIVES_IN", "Breda"),
        ("My friend Ines works at Philips as an engineer.", "Ines", "Ines works at Philips as engineer.",
         "WORKS_AT", "Philips"),
        ("My wife Carmen just started as a teacher at the Montessori school.", "Carmen",
         "Carmen works at Montessori as teacher.", "WORKS_AT", "Montessori"),
        ("Mijn vader werkt bij de Belastingdienst.", None, None, None, None),
    ],
)  # fmt: skip
def test_where_other_people_live_and_work_is_about_them(
    text: str, who: str | None, statement: str | None, predicate: str | None, target: str | None
) -> None:
    claims = [c for c in extract(text).claims if c.predicate != "RELATED_TO"]
    if who is None:  # a relation without a name: nobody to say it about, and not the user's own job
        assert not any(c.subject.is_self for c in claims)
        return
    assert [(c.subject.label, c.statement, c.predicate) for c in claims] == [(who, statement, predicate)]
    assert claims[0].subject.type == "Person"
    assert claims[0].object_node is not None and claims[0].object_node.label == target


@pytest.mark.parametrize(
    ("text", "statement", "predicate"),
    [
        ("I live in Zwolle.", "Lives in Zwolle.", "LIVES_IN"),
        ("Ik woon sinds vorig jaar in Breda.", None, None),
        ("Sinds vorig jaar woon ik in Breda.", "Lives in Breda.", "LIVES_IN"),
        ("Ik woon in Breda.", "Lives in Breda.", "LIVES_IN"),
        ("We have moved to Deventer.", "Lives in Deventer.", "LIVES_IN"),
        ("Wij zijn verhuisd naar Deventer.", "Lives in Deventer.", "LIVES_IN"),
        ("I work for Philips.", "Works at Philips.", "WORKS_AT"),
        ("Ik werk bij Philips als monteur.", "Works at Philips as monteur.", "WORKS_AT"),
        ("Vanaf mei werk ik bij het Rijksmuseum.", "Works at Rijksmuseum.", "WORKS_AT"),
        ("Yesterday was my first day at Bol.", "Works at Bol.", "WORKS_AT"),
        ("I joined Mollie last week.", "Works at Mollie.", "WORKS_AT"),
    ],
)
def test_where_the_user_lives_and_works(text: str, statement: str | None, predicate: str | None) -> None:
    claims = extract(text).claims
    if statement is None:  # an adverb between the verb and "in" that the rules do not know: nothing, not junk
        assert all(c.subject.is_self and c.predicate in ("", "LIVES_IN") for c in claims)
        return
    assert [(c.statement, c.predicate, c.subject.is_self) for c in claims] == [(statement, predicate, True)]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I'm allergic to peanuts.", "Is allergic to peanuts."),
        ("I am severely allergic to wasp stings, so keep an epipen nearby.", "Is allergic to wasp stings."),
        ("Ik ben allergisch voor noten.", "Is allergisch voor noten."),
        ("Ik ben gluten-intolerant.", "Is gluten-intolerant."),
        ("I'm vegan these days.", "Is vegan."),
        ("I have a nut allergy.", "Has a nut allergy."),
        ("Ik heb astma.", "Has astma."),
        ("Ik ben vegetariër.", "Is vegetariër."),
        ("Ik ben sinds kort veganist.", "Is veganist."),
    ],
)
def test_health_and_diet_are_facts_about_the_user(text: str, statement: str) -> None:
    claims = extract(text).claims
    assert [(c.statement, c.subject.is_self, c.importance >= 4) for c in claims][:1] == [(statement, True, True)]


def test_a_named_persons_diet_is_about_them() -> None:
    found = extract("Quick note before the barbecue: Youssef is vegetarian.")
    assert about(found) == [("Youssef", "Youssef is vegetarian.")]
    assert [p.label for p in found.people] == ["Youssef"]


@pytest.mark.parametrize(
    ("text", "statement", "topic"),
    [
        ("I love long walks on the beach.", "Loves long walks on the beach.", "walk"),
        ("I can't stand loud restaurants.", "Cannot stand loud restaurants.", "restaurant"),
        ("Ik hou van Italiaanse wijn.", "Loves Italiaanse wijn.", "wijn"),
        ("Ik heb een hekel aan vroege vergaderingen.", "Hates vroege vergaderingen.", "vergaderingen"),
        ("I'm much more productive in the early evening.", "Is much more productive in the early evening.", ""),
    ],
)
def test_preferences_in_both_languages(text: str, statement: str, topic: str) -> None:
    claims = extract(text).claims
    assert [(c.statement, c.kind, c.subject.is_self) for c in claims] == [(statement, "preference", True)]
    assert claims[0].predicate == (f"PREFERS:{topic}" if topic else "")


def test_a_changed_preference_has_the_same_topic_so_it_replaces_the_old_one() -> None:
    old = extract("I like my calls short, ideally under twenty minutes.").claims[0]
    new = extract("These days I prefer longer calls.").claims[0]
    assert old.predicate == new.predicate == "PREFERS:call"
    assert (old.object_value["replaces"], new.object_value["replaces"]) == (False, True)


@pytest.mark.parametrize(
    ("text", "replaces"),
    [
        ("I love iced coffee.", False),  # another liking on the topic; both stay
        ("I prefer iced coffee.", True),  # a choice
        ("Nowadays I love iced coffee.", True),  # a change
        ("I no longer like iced coffee.", None),  # not read: nothing replaces anything
        ("Ik drink tegenwoordig liever thee.", True),
        ("Tegenwoordig hou ik van thee.", True),
        ("Ik hou van thee.", False),
    ],
)
def test_which_preferences_replace_the_earlier_ones_on_their_topic(text: str, replaces: bool | None) -> None:
    claims = extract(text).claims
    assert [c.object_value["replaces"] for c in claims] == ([] if replaces is None else [replaces])


def test_another_persons_preference_is_about_them() -> None:
    found = extract("My boss Ingrid prefers a phone call over a long email.")
    assert ("Ingrid", "Ingrid prefers a phone call over a long email.") in about(found)
    assert not any(c.subject.is_self and c.kind == "preference" for c in found.claims)


@pytest.mark.parametrize(
    "text",
    [
        'Pieter kept saying "I love karaoke" all evening.',
        "Pieter said that I love karaoke, which is not true.",
        "Pieter zei: 'ik hou van karaoke'.",
        "If I lived in Lisbon I would surf every day.",
        "Maybe I'll work at a startup one day.",
        "Als ik bij Google werk, verhuis ik naar Zürich.",
        "Misschien ben ik allergisch voor katten.",
        "Should I move to Leiden?",
        "Do I like sushi?",
        "Back when I was twenty I lived in Nijmegen.",
        "I used to work at Shell.",
    ],
)
def test_nothing_is_stored_about_the_user_from_quotes_hypotheticals_questions_and_the_past(text: str) -> None:
    found = extract(text)
    assert not [c for c in found.claims if c.subject.is_self]
    assert not found.tasks


def test_the_assistants_guess_is_not_a_fact() -> None:
    found = extract("Since you live in Maastricht, the train to Liège is short.", role="assistant")
    assert found.claims == [] and found.people == []


@pytest.mark.parametrize(
    ("text", "people"),
    [
        ("I'll hand the keys to Bastiaan on Monday.", ["Bastiaan"]),
        ("Tomorrow I should call Elif about the lease.", ["Elif"]),
        ("Ik stuur het contract morgen naar Joost.", ["Joost"]),
        ("Heads-up: Mireille will take over the project.", ["Mireille"]),
        ("Noor, the architect, promised new drawings.", ["Noor"]),
        ("Ties heeft beloofd de sleutels te brengen.", ["Ties"]),
        ("Thanks! Sounds good.", []),
        ("Maybe. Morgen verder.", []),
        ("Back then it rained all week.", []),
        ("Vandaag bel ik de verzekering.", []),
        ("Utrecht is lovely in spring.", []),
        ("We moved to Arnhem in May.", []),
    ],
)
def test_named_people_and_words_that_only_look_like_names(text: str, people: list[str]) -> None:
    assert [person.label for person in extract(text).people] == people


def test_a_question_to_oneself_is_nothing_but_a_request_to_the_assistant_keeps_its_task() -> None:
    wondering = extract("Should I call the bank tomorrow?")
    assert wondering.tasks == [] and wondering.claims == []
    asking = extract("Can you remind me to call the bank tomorrow?")
    assert [task.label for task in asking.tasks] == ["Call the bank"]
    assert asking.claims == []


@pytest.mark.parametrize(
    ("text", "statement", "predicate"),
    [
        ("Ik vind lange wandelingen heerlijk.", "Likes lange wandelingen.", "PREFERS:wandelingen"),
        ("Thee vind ik niet lekker.", "Does not like Thee.", "PREFERS:thee"),
        ("Ik drink liever water dan frisdrank.", "Prefers: drink liever water dan frisdrank.", "PREFERS:water"),
        ("My favourite author is Tolkien.", "Favourite author is Tolkien.", "PREFERS:favourite-author"),
        ("Mijn favoriete sport is hockey.", "Favourite sport is hockey.", "PREFERS:favourite-sport"),
        ("I can't eat gluten.", "Does not eat gluten.", ""),
    ],
)
def test_more_ways_to_say_a_preference(text: str, statement: str, predicate: str) -> None:
    claims = extract(text).claims
    assert [(c.statement, c.predicate, c.subject.is_self) for c in claims] == [(statement, predicate, True)]


@pytest.mark.parametrize(
    "text",
    [
        "Daarna gaat Pieter naar huis.",  # a fronted adverb, not a name (Pieter after the verb is not found)
        "We flew to Porto with Transavia.",
        "Ik ga met Kerst naar Limburg.",
        "Straks moet ik nog boodschappen doen.",
        "Everyone will join the call.",
    ],
)
def test_no_junk_people(text: str) -> None:
    assert [p.label for p in extract(text).people if p.label != "Pieter"] == []


def test_dutch_als_meaning_as_is_not_a_hypothetical() -> None:
    assert about(extract("Als adviseur werk ik bij de gemeente Delft.")) == [("me", "Works at gemeente Delft.")]
    assert extract("Als ik bij de gemeente Delft werk, fiets ik elke dag.").claims == []


@pytest.mark.parametrize(
    ("text", "who", "statement"),
    [
        ("Onze buurvrouw Greet woont al dertig jaar in Zeist.", "Greet", "Greet lives in Zeist."),
        ("Ik werk al vijf jaar bij Stedin.", "me", "Works at Stedin."),
        ("My friend Olga works as a pilot in Dubai.", "Olga", "Olga works as pilot."),
        ("I got a new job at Picnic.", "me", "Works at Picnic."),
        ("I'm a data engineer at Bunq.", "me", "Works at Bunq as data engineer."),
        ("Ik ben sinds april in dienst bij Enexis.", "me", "Works at Enexis."),
        ("Ik werk bij Enexis als planner in Zwolle.", "me", "Works at Enexis as planner."),
        ("Ik heb een noten-allergie.", "me", "Has een noten-allergie."),
        ("I'm lactose intolerant.", "me", "Is lactose intolerant."),
        ("Ik hou echt van Franse films.", "me", "Loves Franse films."),
        ("Ik houd echt niet van koriander.", "me", "Does not like koriander."),
        ("My manager's name is Wim.", None, None),
    ],
)
def test_more_ways_to_say_where_and_how(text: str, who: str | None, statement: str | None) -> None:
    facts = [pair for pair in about(extract(text)) if "the user's" not in pair[1]]
    assert facts == ([(who, statement)] if who else [])


def test_never_mind_is_not_a_rule_and_a_topic_skips_it_when() -> None:
    assert extract("Oh well. Never mind.").claims == []
    claims = extract("I hate it when trains are late. Honestly, I prefer trains over buses.").claims
    assert [c.predicate for c in claims][1] == "PREFERS:train"


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I'm a big fan of Belgian beer.", "Likes Belgian beer."),
        ("I'm not a fan of podcasts.", "Does not like podcasts."),
        ("I'm really into bouldering.", "Likes bouldering."),
        ("Ik ben gek op drop.", "Loves drop."),
        ("Ik ben dol op wandelen.", "Loves wandelen."),
    ],
)
def test_fan_of_into_and_gek_op_are_preferences(text: str, statement: str) -> None:
    assert [(c.statement, c.kind) for c in extract(text).claims] == [(statement, "preference")]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("My goal this year is to swim a mile.", "Goal: to swim a mile."),
        ("Mijn doel is om Spaans te leren.", "Goal: om Spaans te leren."),
        ("I'm trying to sleep more.", "Is trying to sleep more."),
        ("I'm learning Portuguese for our trip.", "Is learning Portuguese for our trip."),
    ],
)
def test_goals_are_facts_about_the_user(text: str, statement: str) -> None:
    assert [(c.statement, c.subject.is_self) for c in extract(text).claims] == [(statement, True)]


def test_a_named_persons_diet_with_an_article() -> None:
    assert about(extract("Bart is a vegetarian.")) == [("Bart", "Bart is a vegetarian.")]


def test_a_pronoun_in_the_next_sentence_means_the_person_named_before() -> None:
    found = extract("I had coffee with my cousin Wouter. He lives in Enschede now. Ik woon in Hengelo.")
    assert ("Wouter", "Wouter lives in Enschede.") in about(found)
    assert ("me", "Lives in Hengelo.") in about(found)


def test_a_pronoun_with_nobody_named_before_is_nothing() -> None:
    assert extract("She lives in Enschede now.").claims == []


@pytest.mark.parametrize(
    "text",
    [
        "Breakfast will be late today.",
        "Parking is going up in price.",
        "Spotify keeps changing the app.",
        "Nothing will change here.",
        "De huur gaat omhoog. Koffie kan zijn.",
    ],
)
def test_things_as_subjects_are_not_people(text: str) -> None:
    assert extract(text).people == []


@pytest.mark.parametrize(
    ("text", "people"),
    [
        ("Rosa will call the landlord.", ["Rosa"]),
        ("Hugo kept asking about the budget.", ["Hugo"]),
        ("Thijs is going to paint the fence.", ["Thijs"]),
        ("Lieke heeft gezegd dat ze komt.", ["Lieke"]),
    ],
)
def test_people_as_subjects(text: str, people: list[str]) -> None:
    assert [p.label for p in extract(text).people] == people


def test_dutch_inverted_hou_ik_van() -> None:
    assert about(extract("Eerlijk gezegd hou ik niet van olijven.")) == [("me", "Does not like olijven.")]
    assert about(extract("Sinds kort hou ik echt van hardlopen.")) == [("me", "Loves hardlopen.")]


@pytest.mark.parametrize(
    ("text", "people"),
    [
        ("I'll call Anna Tuesday about the keys.", ["Anna"]),
        ("My colleague Jan de Vries works at Ortec.", ["Jan de Vries"]),
        ("Mijn zus Lotte Jansen woont in Tiel.", ["Lotte Jansen"]),
    ],
)
def test_a_persons_label_is_their_name_only(text: str, people: list[str]) -> None:
    assert [p.label for p in extract(text).people] == people


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ('Pieter kept saying "I love karaoke" all evening.', [("Pieter", "Pieter loves karaoke.")]),
        ('Mila told me "I work at Zalando now".', [("Mila", "Mila works at Zalando.")]),
        ('Sanne zei: "Ik ben allergisch voor noten."', [("Sanne", "Sanne is allergisch voor noten.")]),
        ("Daan texted “my first day at Coolblue went fine”.", [("Daan", "Daan works at Coolblue.")]),
    ],
)
def test_a_quote_is_attributed_to_its_speaker(text: str, facts: list[tuple[str, str]]) -> None:
    found = extract(text)
    assert about(found) == facts
    assert all(not c.subject.is_self for c in found.claims)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Where one is based is where one lives.
        ("I'm based in Maastricht nowadays.", [("me", "Lives in Maastricht.")]),
        ("We're now settled in Apeldoorn.", [("me", "Lives in Apeldoorn.")]),
        # A job noun after "a"/"een" (or bare in Dutch), with where.
        ("I'm a physiotherapist at a clinic in Zeist.", [("me", "Is a physiotherapist at a clinic in Zeist.")]),
        ("I'm an electrician.", [("me", "Is an electrician.")]),
        ("Ik ben tandarts in Venlo.", [("me", "Is a tandarts in Venlo.")]),
        ("Joanna is a former journalist.", [("Joanna", "Joanna is a former journalist.")]),
        ("My stepfather Evert is a retired carpenter.",
         [("me", "Evert is the user's stepfather."), ("Evert", "Evert is a retired carpenter.")]),
        # Teaching and studying say what someone does.
        ("My flatmate Iris teaches piano at the conservatory.",
         [("me", "Iris is the user's flatmate."), ("Iris", "Iris teaches piano at the conservatory.")]),
        ("Ik studeer geneeskunde in Groningen.", [("me", "Studies geneeskunde in Groningen.")]),
        # What one cannot have, as a bare thing.
        ("I can't have dairy, it upsets my stomach.", [("me", "Cannot have dairy.")]),
        ("Ik kan niet tegen pinda's.", [("me", "Cannot have pinda's.")]),
        # A relation set off by commas.
        ("My dentist is nice, but my sister, Marit, lives in Arnhem.",
         [("me", "Marit is the user's sister."), ("Marit", "Marit lives in Arnhem.")]),
        ("Our neighbour, Fleur, lives in Zeist.",
         [("me", "Fleur is the user's neighbour."), ("Fleur", "Fleur lives in Zeist.")]),
    ],
)  # fmt: skip
def test_more_ways_to_say_where_one_lives_works_and_what_one_cannot_have(
    text: str, expected: list[tuple[str, str]]
) -> None:
    found = extract(text)
    got = [("me" if c.subject.is_self else c.subject.label, c.statement) for c in found.claims]
    assert got == expected


@pytest.mark.parametrize(
    "text",
    [
        "I'm a patient person.",
        "I'm a big fan of the band.",
        "I can't have the party at my place.",
        "I'm a member of the tennis club.",
        "Ik ben lekker bezig.",
        "That was a disaster.",
    ],
)
def test_traits_memberships_and_plans_are_not_jobs_or_diets(text: str) -> None:
    found = extract(text)
    assert not [c for c in found.claims if c.statement.startswith(("Is a", "Is an", "Cannot have"))]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I prefer to go swimming in the evening.", "These days I prefer swimming at lunchtime."),
        ("I like to cycle to work.", "Nowadays I prefer cycling only on weekends."),
    ],
)
def test_an_infinitive_and_a_gerund_share_a_preference_topic(first: str, second: str) -> None:
    (old,) = extract(first).claims
    (new,) = extract(second).claims
    assert old.predicate == new.predicate != "PREFERS:"
    assert new.object_value == {"topic": new.predicate.removeprefix("PREFERS:"), "replaces": True}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I've lived in Deventer since 2015.", [("me", "Lives in Deventer.")]),
        ("We emigrated to Auckland last year.", [("me", "Lives in Auckland.")]),
        ("I'm employed by the Kadaster.", [("me", "Works at Kadaster.")]),
        ("I work part-time for a charity in Gouda.", [("me", "Works for a charity in Gouda.")]),
        ("Mijn broer Sem werkt bij de brandweer.",
         [("me", "Sem is the user's brother (broer)."), ("Sem", "Sem works at de brandweer.")]),
        ("I'm dairy-free these days.", [("me", "Is dairy-free.")]),
        ("I honestly adore Thai curries.", [("me", "Loves Thai curries.")]),
        ("I'd rather take the bus to work.", [("me", "Would rather take the bus to work.")]),
        ("Ik drink geen koffie meer.", [("me", "Does not drink koffie.")]),
    ],
)  # fmt: skip
def test_present_perfect_homes_unnamed_employers_and_more_preferences(
    text: str, expected: list[tuple[str, str]]
) -> None:
    found = extract(text)
    assert [("me" if c.subject.is_self else c.subject.label, c.statement) for c in found.claims] == expected


@pytest.mark.parametrize("text", ["I lived in Lyon as a student.", "I work for a living, you know."])
def test_a_past_home_and_an_idiom_are_not_current_facts(text: str) -> None:
    assert extract(text).claims == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live close to Amersfoort.", [("me", "Lives near Amersfoort.")]),
        ("Ik woon vlakbij Almere.", [("me", "Lives near Almere.")]),
        ("My uncle Wim lives in a houseboat in Amsterdam.",
         [("me", "Wim is the user's uncle."), ("Wim", "Wim lives in Amsterdam.")]),
        ("I'm a data engineer at a retailer.", [("me", "Is a data engineer at a retailer.")]),
        ("I've been a paramedic for twelve years.", [("me", "Is a paramedic for twelve years.")]),
        ("Ik ben al lang veganist.", [("me", "Is veganist.")]),
        ("I don't really care for musicals.", [("me", "Does not like musicals.")]),
        ("Kim doesn't enjoy long drives.", [("Kim", "Kim does not like long drives.")]),
    ],
)  # fmt: skip
def test_homes_near_a_town_compound_jobs_and_negative_enjoyment(text: str, expected: list[tuple[str, str]]) -> None:
    found = extract(text)
    assert [("me" if c.subject.is_self else c.subject.label, c.statement) for c in found.claims] == expected

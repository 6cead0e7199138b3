"""Wording shared by the offline rules: how a name looks, words that look like names but are not, the words
for relations in English and Dutch, and how a phrase becomes a label or a statement."""

from __future__ import annotations

import re

# Case-sensitive on purpose: a name starts with a capital (compile patterns holding it without IGNORECASE, or
# scope IGNORECASE to the words around it with (?i:...)).
NAME = r"(?P<name>[A-Z][a-zà-ÿ]+(?:\s+(?:de|van|der|den|von|da)?\s*[A-Z][a-zà-ÿ]+)?)"

# Capitalised words that start sentences or stand alone but are nobody's name (both languages).
NOT_NAMES = {
    "I", "The", "A", "An", "My", "We", "You", "It", "This", "That", "He", "She", "They", "Our", "Your", "His",
    "Her", "Their", "There", "Here", "Then", "So", "But", "And", "Or", "If", "When", "Since", "After", "Before",
    "Maybe", "Perhaps", "Thanks", "Thank", "Back", "Also", "Yes", "No", "Ok", "Okay", "Sorry", "Please", "Hi",
    "Hello", "Hey", "Great", "Good", "Nice", "Sure", "Well", "Just", "Still", "Now", "Today", "Tomorrow",
    "Yesterday", "Tonight", "Update", "Heads", "Note", "Noted", "Reminder", "Hmm", "Oh", "Ah",
    "Ik", "Jij", "Je", "Wij", "Ze", "Zij", "Hij", "Het", "De", "Een", "Mijn", "Onze", "Dat", "Dit", "Dan",
    "Maar", "En", "Of", "Als", "Toen", "Sinds", "Na", "Voor", "Misschien", "Bedankt", "Dank", "Ja", "Nee", "Hoi",
    "Hallo", "Goed", "Prima", "Nu", "Vandaag", "Morgen", "Gisteren", "Vanavond", "Overmorgen", "Ook", "Nog",
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "Maandag", "Dinsdag",
    "Woensdag", "Donderdag", "Vrijdag", "Zaterdag", "Zondag", "January", "February", "March", "April", "May",
    "June", "July", "August", "September", "October", "November", "December", "Januari", "Februari", "Maart",
    "Mei", "Juni", "Juli", "Augustus", "Oktober",
    # Sentence adverbs, quantifiers and question words: Dutch puts the verb right after a fronted one.
    "Afterwards", "Later", "First", "Hopefully", "Unfortunately", "Luckily", "Actually", "Probably", "Apparently",
    "Anyway", "Sadly", "Soon", "Finally", "Meanwhile", "Otherwise", "Instead", "Everyone", "Everybody", "Nobody",
    "Someone", "Somebody", "Anyone", "Who", "What", "Where", "Why", "How", "Which", "These", "Those", "Every",
    "Each", "All", "Both", "Some", "Most", "Many", "Christmas", "Easter", "Daarna", "Straks", "Eerst", "Daarom",
    "Dus", "Gelukkig", "Helaas", "Eigenlijk", "Vanochtend", "Vanmiddag", "Volgende", "Vorige", "Afgelopen",
    "Binnenkort", "Hopelijk", "Waarschijnlijk", "Zeker", "Toch", "Echter", "Verder", "Bovendien", "Zo", "Hier",
    "Daar", "Er", "Wie", "Wat", "Waar", "Wanneer", "Hoe", "Waarom", "Welke", "Deze", "Die", "Elke", "Iedere",
    "Alle", "Beide", "Everything", "Nothing", "Something", "Anything", "Alles", "Niets", "Iets",
    "Iedereen", "Niemand", "Iemand", "Kerst", "Pasen", "Pinksteren", "Inmiddels", "Tegenwoordig",
}  # fmt: skip

# Relation words, English and Dutch, with the English word a statement uses.
RELATIONS = {
    "wife": "wife", "husband": "husband", "partner": "partner", "girlfriend": "girlfriend",
    "boyfriend": "boyfriend", "fiancé": "fiancé", "fiancee": "fiancée", "fiance": "fiancé", "sister": "sister",
    "brother": "brother", "mother": "mother", "mom": "mother", "mum": "mother", "father": "father",
    "dad": "father", "son": "son", "daughter": "daughter", "manager": "manager", "boss": "boss",
    "colleague": "colleague", "coworker": "colleague", "co-worker": "colleague", "friend": "friend",
    "cousin": "cousin", "neighbour": "neighbour", "neighbor": "neighbour", "aunt": "aunt", "uncle": "uncle",
    "grandmother": "grandmother", "grandma": "grandmother", "grandfather": "grandfather",
    "grandpa": "grandfather", "niece": "niece", "nephew": "nephew", "roommate": "roommate",
    "flatmate": "flatmate", "landlord": "landlord", "landlady": "landlady", "mentor": "mentor",
    "vrouw": "wife", "man": "husband", "vriendin": "girlfriend or friend", "vriend": "friend", "zus": "sister",
    "zuster": "sister", "broer": "brother", "moeder": "mother", "mama": "mother", "vader": "father",
    "papa": "father", "zoon": "son", "dochter": "daughter", "baas": "boss", "leidinggevende": "manager",
    "collega": "colleague", "buurman": "neighbour", "buurvrouw": "neighbour", "neef": "cousin",
    "nicht": "cousin", "oom": "uncle", "tante": "aunt", "oma": "grandmother", "opa": "grandfather",
    "huisgenoot": "housemate", "schoonmoeder": "mother-in-law", "schoonvader": "father-in-law",
    "mother-in-law": "mother-in-law", "father-in-law": "father-in-law", "sister-in-law": "sister-in-law",
    "brother-in-law": "brother-in-law", "son-in-law": "son-in-law", "daughter-in-law": "daughter-in-law",
    "stepmother": "stepmother", "stepfather": "stepfather", "stepson": "stepson", "stepdaughter": "stepdaughter",
    "stepbrother": "stepbrother", "stepsister": "stepsister", "godmother": "godmother", "godfather": "godfather",
    "zwager": "brother-in-law", "schoonzus": "sister-in-law", "schoonzuster": "sister-in-law",
    "schoonbroer": "brother-in-law", "schoonzoon": "son-in-law", "schoondochter": "daughter-in-law",
    "stiefmoeder": "stepmother", "stiefvader": "stepfather", "peettante": "godmother", "peetoom": "godfather",
    "grootmoeder": "grandmother", "grootvader": "grandfather", "kleinzoon": "grandson",
    "kleindochter": "granddaughter", "grandson": "grandson", "granddaughter": "granddaughter",
}  # fmt: skip
RELATION_WORDS = "|".join(sorted(RELATIONS, key=len, reverse=True))
_SPACES = re.compile(r"\s+")


def is_name(word: str) -> bool:
    return bool(word) and word.split()[0] not in NOT_NAMES


def clean(text: str) -> str:
    return text.strip().rstrip(".!?,;: ").strip()


def sentence_case(text: str) -> str:
    text = _SPACES.sub(" ", clean(text))
    return text[:1].upper() + text[1:] if text else text

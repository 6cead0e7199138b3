"""Word lists the facts reader needs beyond patterns: which nouns name a job, and the topic a preference is
about (so that a later preference on the same topic replaces it)."""

from __future__ import annotations

import re

JOB = (
    r"[a-z-]*(?:ist|ian|ant|ent|eur|or|er|ess|nurse|doctor|chef|pilot|cook|clerk|agent|coach|judge|vet|midwife|"
    r"surgeon|dentist|attorney|architect|mechanic|medic|analyst|man|woman|person|kundige|arts|aris|leraar|lerares|"
    r"docent|ster|kok|boer)"
)
# Dutch names a job without an article ("ik ben tandarts"); English "I'm better" is no job, so only these.
JOB_BARE = r"[a-z-]*(?:kundige|arts|aris|leraar|lerares|docent|eur|ist|ster|kok|boer|agent|chef|coach)"
# How a preference verb reads in a statement about someone.
THIRD_PERSON = {
    "prefer": "Prefers", "'d rather": "Would rather", "would rather": "Would rather", "like": "Likes",
    "love": "Loves", "adore": "Loves", "enjoy": "Enjoys", "hate": "Hates",
    "dislike": "Dislikes", "don't like": "Does not like", "do not like": "Does not like", "can't stand": "Cannot stand",
    "cannot stand": "Cannot stand", "can not stand": "Cannot stand", "hou van": "Loves", "houd van": "Loves",
    "hou niet van": "Does not like", "houd niet van": "Does not like", "heb een hekel aan": "Hates",
    "geef de voorkeur aan": "Prefers",
}  # fmt: skip
NOT_JOBS = {
    "fan", "member", "user", "owner", "beginner", "believer", "lover", "leader", "winner", "loser", "other",
    "number", "parent", "patient", "resident", "student", "regular", "customer", "client", "donor", "visitor",
    "neighbour", "neighbor", "sister", "brother", "mother", "father", "daughter", "partner",
    "lekker", "later", "ouder", "zeker", "eerder", "verder", "liever", "minder", "beter", "weer", "er", "moeder",
    "vader", "zuster", "broer", "dochter", "man", "woman", "person", "human", "gentleman", "monster",
    "disaster", "master", "ster", "vegetarian", "intolerant", "pescatarian", "diabetic", "tolerant",
    "tourist", "optimist", "pessimist", "perfectionist", "introvert", "extrovert", "idiot", "adult", "expert",
    "character", "keeper", "sleeper", "talker", "listener", "thinker", "dreamer", "worrier", "planner", "joker",
}  # fmt: skip
# Adjectives that follow what they describe in "I like my coffee black": not the topic.
PREDICATIVE = {
    "short", "long", "early", "late", "black", "strong", "weak", "hot", "cold", "warm", "quiet", "loud", "small",
    "big", "simple", "brief", "sweet", "spicy", "kort", "lang", "vroeg", "laat", "zwart", "sterk", "heet", "koud",
    "rustig", "klein", "groot", "zoet", "pittig", "only", "mostly", "usually", "always", "alone", "together",
    "outside", "outdoors", "indoors", "daily", "alleen", "samen", "buiten", "binnen",
}  # fmt: skip


ING_NOUNS = {
    "meeting", "evening", "morning", "wedding", "building", "ceiling", "clothing", "pudding", "sibling", "ending",
    "feeling", "painting", "setting", "briefing", "booking", "filling", "stuffing", "icing", "dressing", "topping",
    "housing", "parking", "frosting", "seasoning", "offering", "earring", "dumpling", "herring", "outing",
}  # fmt: skip


def topic_of(what: str) -> str:
    """The thing a preference is about, so that a new preference on it replaces the old one: the head noun of
    the phrase before any preposition ("my meetings in the morning" and "afternoon meetings" -> "meeting")."""
    words = re.split(
        r"\b(?:in|on|at|by|before|after|with|for|from|than|rather|over|instead|ideally|when|if|to|op|in|bij|met|voor|"
        r"na|dan|boven)\b|[,;]",
        re.sub(r"^(?:it|that|het|dat)\s+(?:when|if|als|wanneer)\s+", "", what.lower()),
    )[0].split()
    words = [w for w in words if w not in {"my", "the", "a", "an", "mijn", "de", "het", "een", "to"}]
    while len(words) > 1 and words[-1] in PREDICATIVE:  # "my calls short", "mijn koffie zwart"
        words.pop()
    if len(words) > 1 and words[0] in ("go", "going", "gaan"):  # "to go running" is about running
        words.pop(0)
    head = re.sub(r"[^\w-]", "", words[-1]) if words else ""
    if not words and (
        verb := re.match(r"\s*to\s+(?:go\s+)?([a-z]+)", what.lower())
    ):  # "to run in the evening": the verb is the topic
        head = verb[1][:-1] if len(verb[1]) > 3 and verb[1].endswith("e") else verb[1]  # "cycle" as "cycling"
    if len(head) > 5 and head.endswith("ing") and head not in ING_NOUNS:  # "running" and "to run" share a topic
        head = head[:-3]
        head = head[:-1] if len(head) > 2 and head[-1] == head[-2] else head
    return head[:-1] if len(head) > 3 and head.endswith("s") and not head.endswith("ss") else head

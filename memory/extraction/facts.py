"""Facts in the owner's own sentences: preferences, where they work and live, their relations, decisions,
agreements, standing rules, and short-lived working context (meetings, follow-ups)."""

from __future__ import annotations

import re

from memory.extraction.base import SELF, ClaimCandidate, EvidenceRef, Extraction, NodeRef
from memory.extraction.wording import NAME, NOT_NAMES, clean, sentence_case

PREFERENCE = re.compile(
    r"\bI\s+(?:really\s+|much\s+|definitely\s+)?(?P<verb>prefer|like|love|enjoy|hate|dislike|don't like|do not like)"
    r"\s+(?P<what>.+)",
    re.IGNORECASE,
)
THIRD_PERSON = {
    "prefer": "Prefers", "like": "Likes", "love": "Loves", "enjoy": "Enjoys", "hate": "Hates",
    "dislike": "Dislikes", "don't like": "Does not like", "do not like": "Does not like",
}  # fmt: skip
WORKS_AT = re.compile(r"\bI\s+(?:now\s+)?work\s+(?:at|for)\s+(?P<org>[A-Z][\w&.\-]*(?:\s+[A-Z][\w&.\-]*)*)")
LIVES_IN = re.compile(r"\bI\s+(?:now\s+)?live\s+in\s+(?P<place>[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*)*)")
RELATION = re.compile(
    r"\bmy\s+(?P<relation>wife|husband|partner|girlfriend|boyfriend|sister|brother|mother|mom|father|dad|son|"
    r"daughter|manager|boss|colleague|friend|cousin)(?:'s name)?,?\s+(?:is\s+)?" + NAME,
    re.IGNORECASE,
)
DECISION = re.compile(r"\b(?:I|we)(?:'ve| have)?\s+decided\s+(?:to|that|on)\s+(?P<what>.+)", re.IGNORECASE)
AGREEMENT = re.compile(r"\bwe\s+(?:have\s+)?agreed\s+(?:to|that|on)\s+(?P<what>.+)", re.IGNORECASE)
RULE = re.compile(r"^(?:please\s+)?(?P<what>(?:always|never|from now on)\b.+)", re.IGNORECASE)
MEETING = re.compile(r"\b(?P<what>(?i:meeting|call|lunch|dinner|sync|catch-up)\s+with\s+" + NAME + r".*)")
FOLLOW_UP = re.compile(r"\b(?P<what>(?i:follow(?:\s|-)up)\s+with\s+" + NAME + r".*)")


def find_facts(sentence: str, evidence: EvidenceRef) -> Extraction:
    """Claims about the owner (preferences, work, home, relations, decisions, agreements, rules) and working
    context (meetings, follow-ups) in one sentence of the owner's, with the people they name."""
    found = Extraction()
    if match := PREFERENCE.search(sentence):
        verb = THIRD_PERSON[match["verb"].lower()]
        found.claims.append(
            ClaimCandidate(f"{verb} {clean(match['what'])}.", "preference", SELF, evidence, importance=3)
        )
    if match := WORKS_AT.search(sentence):
        org = NodeRef(type="Organization", label=clean(match["org"]))
        found.claims.append(
            ClaimCandidate(f"Works at {org.label}.", "fact", SELF, evidence, "WORKS_AT", org, importance=4)
        )
    if match := LIVES_IN.search(sentence):
        place = NodeRef(type="Place", label=clean(match["place"]))
        found.claims.append(
            ClaimCandidate(f"Lives in {place.label}.", "fact", SELF, evidence, "LIVES_IN", place, importance=4)
        )
    if (match := RELATION.search(sentence)) and match["name"] not in NOT_NAMES:
        person = NodeRef(type="Person", label=match["name"])
        relation = match["relation"].lower()
        found.people.append(person)
        found.claims.append(
            ClaimCandidate(
                f"{person.label} is the user's {relation}.",
                "fact",
                SELF,
                evidence,
                "RELATED_TO",
                person,
                object_value={"relation": relation},
                importance=4,
            )
        )
    for pattern, kind in ((DECISION, "decision"), (AGREEMENT, "agreement")):
        if pattern.search(sentence):  # the owner's own words say it best
            found.claims.append(ClaimCandidate(f"{sentence_case(sentence)}.", kind, SELF, evidence))
    if match := RULE.search(sentence):
        found.claims.append(ClaimCandidate(f"{sentence_case(match['what'])}.", "rule", SELF, evidence, importance=4))
    for pattern in (MEETING, FOLLOW_UP):
        if (match := pattern.search(sentence)) and match["name"] not in NOT_NAMES:
            person = NodeRef(type="Person", label=match["name"])
            found.people.append(person)
            found.claims.append(
                ClaimCandidate(
                    f"{sentence_case(match['what'])}.",
                    "working_context",
                    SELF,
                    evidence,
                    "MEETS",
                    person,
                    importance=2,
                    expires_in_days=14,
                )
            )
    return found

"""The default extractor: offline and deterministic, first-person statements of the memory's owner.

Only the owner's own words become facts about them (an assistant's turn never does); commitments become
task candidates with an owner and a due date; completion and cancellation wording targets open tasks;
meetings and follow-ups become short-lived working context; numeric readings ("weighed 78.2 kg") are kept
for the owner's metrics; named people become Person nodes.
"""

from __future__ import annotations

import re
from datetime import date
from zoneinfo import ZoneInfo

from memory.extraction.base import (
    SELF,
    ClaimCandidate,
    EvidenceRef,
    Extraction,
    NodeRef,
    TaskCandidate,
    TextUnit,
)
from memory.extraction.dates import deadline_day, find_deadline, resolve_day
from memory.extraction.readings import find_readings

VERSION = "2"
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_NAME = r"(?P<name>[A-Z][a-zà-ÿ]+(?:\s+(?:de|van|der|den|von|da)?\s*[A-Z][a-zà-ÿ]+)?)"

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
    r"daughter|manager|boss|colleague|friend|cousin)(?:'s name)?,?\s+(?:is\s+)?" + _NAME,
    re.IGNORECASE,
)
DECISION = re.compile(r"\b(?:I|we)(?:'ve| have)?\s+decided\s+(?:to|that|on)\s+(?P<what>.+)", re.IGNORECASE)
AGREEMENT = re.compile(r"\bwe\s+(?:have\s+)?agreed\s+(?:to|that|on)\s+(?P<what>.+)", re.IGNORECASE)
RULE = re.compile(r"^(?:please\s+)?(?P<what>(?:always|never|from now on)\b.+)", re.IGNORECASE)
MEETING = re.compile(r"\b(?P<what>(?i:meeting|call|lunch|dinner|sync|catch-up)\s+with\s+" + _NAME + r".*)")
FOLLOW_UP = re.compile(r"\b(?P<what>(?i:follow(?:\s|-)up)\s+with\s+" + _NAME + r".*)")
BARE_DAY = re.compile(r"(?<!\bvoor )(?<!\btegen )\b(?P<day>today|tonight|tomorrow|vandaag|morgen|overmorgen)\b", re.I)
TRAILING = re.compile(r"\s+(?:anymore|any more|meer)$", re.IGNORECASE)

COMMITMENT = re.compile(
    r"\b(?:I'll|I will|I'm going to|I am going to|I have to|I need to|I must|I promised to|"
    r"ik zal|ik ga|ik moet)\s+(?P<action>.+)",
    re.IGNORECASE,
)
REMIND = re.compile(r"\bremind me to\s+(?P<action>.+)", re.IGNORECASE)
TODO = re.compile(r"^\s*(?:TODO|to-do|action item|actiepunt)\s*[:\-]\s*(?P<action>.+)", re.IGNORECASE)
DONE = re.compile(
    r"\bI(?:'ve| have)?\s+(?:just\s+|already\s+)?(?P<verb>sent|finished|completed|submitted|delivered|paid|called|"
    r"emailed|booked|fixed|done|wrote|written|reviewed|shipped)\b(?P<rest>.*)",
    re.IGNORECASE,
)
CANCELLED = re.compile(
    r"\b(?:no need to|don't need to|do not need to|won't|will not|cancel(?:led)?|forget about|never mind)\s+"
    r"(?P<action>.+)",
    re.IGNORECASE,
)
OWNER_IN_ACTION = re.compile(r"\s+(?:to|for|with|aan)\s+" + _NAME + r"\b")
BASE_FORMS = {
    "sent": "send", "finished": "finish", "completed": "complete", "submitted": "submit", "delivered": "deliver",
    "paid": "pay", "called": "call", "emailed": "email", "booked": "book", "fixed": "fix", "wrote": "write",
    "written": "write", "reviewed": "review", "shipped": "ship", "done": "do",
}  # fmt: skip
NOT_NAMES = {"I", "The", "A", "An", "My", "We", "You", "It", "This", "That", "Monday", "Tuesday", "Wednesday",
             "Thursday", "Friday", "Saturday", "Sunday", "Today", "Tomorrow"}  # fmt: skip


def _clean(text: str) -> str:
    return text.strip().rstrip(".!?,;: ").strip()


def _sentence_case(text: str) -> str:
    text = " ".join(_clean(text).split())
    return text[:1].upper() + text[1:] if text else text


class RulesExtractor:
    name = "rules"
    version = VERSION

    def extract(self, units: list[TextUnit], *, timezone_name: str = "UTC") -> Extraction:
        extraction = Extraction()
        zone = ZoneInfo(timezone_name)
        for unit in units:
            today = unit.authored_at.astimezone(zone).date() if unit.authored_at else date.today()
            if unit.speaker and not unit.by_owner and unit.role not in ("assistant", "system", "tool"):
                extraction.people.append(NodeRef(type="Person", label=unit.speaker))
            if not unit.by_owner:
                continue  # an assistant's or another person's words are not facts about the owner
            for sentence in filter(None, (part.strip() for part in _SENTENCE.split(unit.text))):
                evidence = EvidenceRef(
                    source_id=unit.source_id,
                    excerpt=sentence[:500],
                    message_id=unit.message_id,
                    authored_at=unit.authored_at,
                    chunk_id=unit.chunk_id,
                )
                extraction.extend(self._sentence(sentence, evidence, today))
                extraction.readings.extend(find_readings(sentence, evidence, unit.authored_at))
        return extraction

    def _sentence(self, sentence: str, evidence: EvidenceRef, today: date) -> Extraction:
        found = Extraction()
        found.tasks.extend(self._tasks(sentence, evidence, today))
        if match := PREFERENCE.search(sentence):
            verb = THIRD_PERSON[match["verb"].lower()]
            found.claims.append(
                ClaimCandidate(f"{verb} {_clean(match['what'])}.", "preference", SELF, evidence, importance=3)
            )
        if match := WORKS_AT.search(sentence):
            org = NodeRef(type="Organization", label=_clean(match["org"]))
            found.claims.append(
                ClaimCandidate(f"Works at {org.label}.", "fact", SELF, evidence, "WORKS_AT", org, importance=4)
            )
        if match := LIVES_IN.search(sentence):
            place = NodeRef(type="Place", label=_clean(match["place"]))
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
                found.claims.append(ClaimCandidate(f"{_sentence_case(sentence)}.", kind, SELF, evidence))
        if match := RULE.search(sentence):
            found.claims.append(
                ClaimCandidate(f"{_sentence_case(match['what'])}.", "rule", SELF, evidence, importance=4)
            )
        for pattern in (MEETING, FOLLOW_UP):
            if (match := pattern.search(sentence)) and match["name"] not in NOT_NAMES:
                person = NodeRef(type="Person", label=match["name"])
                found.people.append(person)
                found.claims.append(
                    ClaimCandidate(
                        f"{_sentence_case(match['what'])}.",
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

    def _tasks(self, sentence: str, evidence: EvidenceRef, today: date) -> list[TaskCandidate]:
        deadline, removed = find_deadline(sentence)
        due = resolve_day(deadline_day(deadline), today) if deadline else None
        if deadline is None and (bare := BARE_DAY.search(sentence)):
            deadline, due = bare, resolve_day(bare["day"], today)
        if match := DONE.search(sentence):
            verb = BASE_FORMS.get(match["verb"].lower(), match["verb"].lower())
            return [TaskCandidate(label=f"{verb}{match['rest']}", evidence=evidence, status="completed")]
        if match := CANCELLED.search(sentence):
            label = TRAILING.sub("", _clean(match["action"]))
            return [TaskCandidate(label=label, evidence=evidence, status="abandoned")]
        action = None
        for pattern in (TODO, REMIND, COMMITMENT):
            if match := pattern.search(sentence):
                action = match["action"]
                break
        if action is None:
            if removed:
                # Removal wording about a task named elsewhere: reconcile matches it to an open task.
                return [TaskCandidate(label=sentence, evidence=evidence, due_removed=True)]
            return []
        offset = sentence.find(action)
        if deadline is not None and deadline.start() >= offset:
            # Cut the deadline phrase out (Dutch puts the verb after it: "uiterlijk vrijdag sturen").
            action = action[: deadline.start() - offset] + action[deadline.end() - offset :]
        owner = None
        if (named := OWNER_IN_ACTION.search(action)) and named["name"] not in NOT_NAMES:
            owner = NodeRef(type="Person", label=named["name"])
            action = action[: named.start()] + action[named.end() :]
        label = _sentence_case(action)
        if not label:
            return []
        return [TaskCandidate(label=label, evidence=evidence, owner=owner, due_on=due, due_removed=removed)]

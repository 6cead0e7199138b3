"""Commitments in the owner's sentences: what they will do, with whom and by when; what was done or called
off (reconcile matches those to an open task); removal of a deadline."""

from __future__ import annotations

import re
from datetime import date

from memory.extraction.base import EvidenceRef, NodeRef, TaskCandidate
from memory.extraction.dates import deadline_day, find_deadline, resolve_day
from memory.extraction.wording import NAME, NOT_NAMES, clean, sentence_case

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
OWNER_IN_ACTION = re.compile(r"\s+(?:to|for|with|aan)\s+" + NAME + r"\b")
BASE_FORMS = {
    "sent": "send", "finished": "finish", "completed": "complete", "submitted": "submit", "delivered": "deliver",
    "paid": "pay", "called": "call", "emailed": "email", "booked": "book", "fixed": "fix", "wrote": "write",
    "written": "write", "reviewed": "review", "shipped": "ship", "done": "do",
}  # fmt: skip


def find_tasks(sentence: str, evidence: EvidenceRef, today: date) -> list[TaskCandidate]:
    """Commitments in one sentence of the owner's, with owner and due date, and completion or cancellation
    wording that reconcile matches to an open task."""
    deadline, removed = find_deadline(sentence)
    due = resolve_day(deadline_day(deadline), today) if deadline else None
    if deadline is None and (bare := BARE_DAY.search(sentence)):
        deadline, due = bare, resolve_day(bare["day"], today)
    if match := DONE.search(sentence):
        verb = BASE_FORMS.get(match["verb"].lower(), match["verb"].lower())
        return [TaskCandidate(label=f"{verb}{match['rest']}", evidence=evidence, status="completed")]
    if match := CANCELLED.search(sentence):
        label = TRAILING.sub("", clean(match["action"]))
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
    label = sentence_case(action)
    if not label:
        return []
    return [TaskCandidate(label=label, evidence=evidence, owner=owner, due_on=due, due_removed=removed)]

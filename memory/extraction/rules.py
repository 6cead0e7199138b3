"""The default extractor: offline and deterministic, first-person statements of the memory's owner.

Only the owner's own words become facts about them (an assistant's turn never does); commitments become
task candidates with an owner and a due date (from a document or file, candidates for the owner to confirm);
completion and cancellation wording targets open tasks;
meetings and follow-ups become short-lived working context; numeric readings ("weighed 78.2 kg") are kept
for the owner's metrics; named people become Person nodes.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date
from zoneinfo import ZoneInfo

from memory.extraction.base import EvidenceRef, Extraction, NodeRef, TaskCandidate, TextUnit
from memory.extraction.commitments import accepted_offer, find_tasks
from memory.extraction.facts import find_facts
from memory.extraction.readings import find_readings
from memory.models import ClaimOrigin

VERSION = "5"
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Sentences that state nothing yet: hypotheticals ("if I ...", "maybe I'll ...", "als ik ..."), plans being
# weighed, and questions. A question asking the assistant to do something ("can you remind me ...") may still
# carry a task; no question carries a fact.
HYPOTHETICAL = re.compile(
    r"^\W*(?:if|suppose|supposing|imagine|what\s+if|indien|mocht|stel\s+dat)\b"
    r"|^\W*als\s+(?:ik|je|jij|we|wij|het|er|u|hij|zij|ze|de|dat)\b"  # "als" also means "as" ("Als adviseur ...")
    r"|\b(?:maybe|perhaps|possibly|misschien|wellicht|eventueel|might|thinking\s+(?:about|of)|considering|overweeg)\b",
    re.IGNORECASE,
)
REQUEST = re.compile(r"\b(?:can|could|will|would)\s+you\b|\b(?:kun|kan|wil|zou)\s+(?:je|jij|u)\b", re.IGNORECASE)


class RulesExtractor:
    name = "rules"
    version = VERSION

    def extract(self, units: list[TextUnit], *, timezone_name: str = "UTC") -> Extraction:
        extraction = Extraction()
        zone = ZoneInfo(timezone_name)
        offer = ""  # the assistant's last turn: an offer of a to-do the owner may accept
        for unit in units:
            today = unit.authored_at.astimezone(zone).date() if unit.authored_at else date.today()
            if unit.speaker and not unit.by_owner and unit.role not in ("assistant", "system", "tool"):
                extraction.people.append(NodeRef(type="Person", label=unit.speaker))
            if not unit.by_owner:
                offer = unit.text if unit.role == "assistant" else ""
                continue  # an assistant's or another person's words are not facts about the owner
            if offer:
                reply = EvidenceRef(source_id=unit.source_id, excerpt=unit.text[:500], message_id=unit.message_id,
                                    authored_at=unit.authored_at, chunk_id=unit.chunk_id)  # fmt: skip
                extraction.extend(accepted_offer(offer, unit.text, reply, today))
                offer = ""
            antecedent: NodeRef | None = None  # whom "she" or "hij" in the next sentence may mean
            for sentence in filter(None, (part.strip() for part in _SENTENCE.split(unit.text))):
                evidence = EvidenceRef(
                    source_id=unit.source_id,
                    excerpt=sentence[:500],
                    message_id=unit.message_id,
                    authored_at=unit.authored_at,
                    chunk_id=unit.chunk_id,
                )
                found = self._sentence(sentence, evidence, today, antecedent)
                if unit.attachment:
                    found.tasks = _document_tasks(found.tasks)
                antecedent = found.people[-1] if found.people else antecedent
                extraction.extend(found)
                if not HYPOTHETICAL.search(sentence) and not sentence.rstrip().endswith("?"):
                    extraction.readings.extend(find_readings(sentence, evidence, unit.authored_at))
        return extraction

    def _sentence(self, sentence: str, evidence: EvidenceRef, today: date, antecedent: NodeRef | None) -> Extraction:
        if HYPOTHETICAL.search(sentence):
            return Extraction()
        question = sentence.rstrip().endswith("?")
        found = Extraction() if question else find_facts(sentence, evidence, antecedent=antecedent)
        if question and not REQUEST.search(sentence):
            return found
        tasks = find_tasks(sentence, evidence, today)
        # Both readers name people; the facts reader's label wins ("call Anna Tuesday" names Anna).
        known = {person.label: person for person in found.people}
        for person in tasks.people:
            if _known(person, known) is None:
                known[person.label] = person
                found.people.append(person)
        for task in tasks.tasks:
            # A task names whom its own reader found in its clause and anyone named in its label.
            named = [_known(person, known) or person for person in task.people]
            named += [person for person in found.people if re.search(rf"\b{re.escape(person.label)}\b", task.label)]
            people = tuple(person for person in dict.fromkeys(named) if person != task.owner)
            found.tasks.append(replace(task, people=people))
        return found


def _document_tasks(tasks: list[TaskCandidate]) -> list[TaskCandidate]:
    """A to-do read in a document or file: its "I" is the document's author, who may not be the owner, so it is
    a candidate for the owner to confirm, never an open commitment on its own; and a document's "done" or "moved
    to Thursday" does not close or move a task the owner stated."""
    return [
        replace(task, origin=ClaimOrigin.IMPORTED)
        for task in tasks
        if task.status == "pending" and not task.rescheduled and not task.due_removed
    ]


def _known(person: NodeRef, known: dict[str, NodeRef]) -> NodeRef | None:
    """The person already named under this label or its first words ("Anna" for "Anna Tuesday")."""
    return next((ref for label, ref in known.items() if f"{person.label} ".startswith(f"{label} ")), None)

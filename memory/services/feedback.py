"""observation_log (seeds/004): assistants and agents report what they notice about memory itself (a missing,
wrong or stale memory, a bug, a suggestion). Reports are kept apart from memory content, screened like every
write, exactly once per `event_id`, and read back before they are acknowledged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction

from memory.access import Access
from memory.errors import ValidationFailed
from memory.models import Feedback, FeedbackKind, Scope
from memory.screening import sanitize_text
from memory.selectors import claim_for_access, source_for_access

MAX_NOTE_CHARS = 4000


@dataclass(frozen=True)
class FeedbackAck:
    feedback: Feedback
    deduplicated: bool
    verified_persisted: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.feedback.pk,
            "verified_persisted": self.verified_persisted,
            "deduplicated": self.deduplicated,
        }


def _ack(feedback: Feedback, *, deduplicated: bool) -> FeedbackAck:
    """Read the row back outside the write's transaction. When the caller still holds a transaction around the
    write nothing is committed yet, and the ack says so instead of reading its own uncommitted write."""
    found = Feedback.objects.filter(pk=feedback.pk).values("note", "kind")
    stored = None if connection.in_atomic_block else found.first()
    persisted = stored is not None and (stored["note"], stored["kind"]) == (feedback.note, feedback.kind)
    return FeedbackAck(feedback=feedback, deduplicated=deduplicated, verified_persisted=persisted)


def feedback_log(
    *,
    access: Access,
    kind: str,
    note: str,
    tool: str = "",
    claim_id: str = "",
    source_id: str = "",
    event_id: str = "",
) -> FeedbackAck:
    """Record one report in the strict partition (needs `write`). The claim or source it is about must be in
    reach (else NOT_FOUND). The same `event_id` again answers the first report, deduplicated. Not atomic
    itself: the report commits in its own transaction, then the ack reads it back."""
    feedback, deduplicated = _feedback_write(
        access=access, kind=kind, note=note, tool=tool, claim_id=claim_id, source_id=source_id, event_id=event_id
    )
    return _ack(feedback, deduplicated=deduplicated)


@transaction.atomic
def _feedback_write(
    *, access: Access, kind: str, note: str, tool: str, claim_id: str, source_id: str, event_id: str
) -> tuple[Feedback, bool]:
    access.require_scope(Scope.WRITE)
    partition = access.write_partition()
    if kind not in FeedbackKind.values:
        raise ValidationFailed("Unknown kind of feedback.", details={"kind": [f"One of {FeedbackKind.values}."]})
    note = note.strip()
    if not note or len(note) > MAX_NOTE_CHARS:
        raise ValidationFailed(
            f"A note of 1 to {MAX_NOTE_CHARS} characters is needed.",
            details={"note": [f"1 to {MAX_NOTE_CHARS} characters."]},
        )
    note = sanitize_text(note)  # escaping may lengthen it a little; the limit is on what was sent
    if event_id and (earlier := Feedback.objects.filter(owner=access.user, event_id=event_id).first()):
        return earlier, True
    claim = claim_for_access(access, claim_id) if claim_id else None
    source = source_for_access(access, source_id) if source_id else None
    try:
        with transaction.atomic():
            feedback = Feedback.objects.create(
                owner=access.user, partition=partition, kind=kind, note=note, tool=sanitize_text(tool).strip(),
                claim=claim, source=source, event_id=event_id,
            )  # fmt: skip
    except IntegrityError:  # the same event_id was logged concurrently: that first report is the answer
        return Feedback.objects.get(owner=access.user, event_id=event_id), True
    return feedback, False

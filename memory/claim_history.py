"""What happened to a claim, in words, for the claim page: the audit rows of every revision of it, newest
first, who did each, and whether the newest review decision can still be taken back (memory.services.review)."""

from __future__ import annotations

from dataclasses import dataclass

from memory.access import Access
from memory.activity import WORDS as WORDS  # re-exported: the words used to live here
from memory.activity import event_by, words_for
from memory.models import Claim, MemoryEvent, Scope
from memory.services.review import latest_decision


@dataclass(frozen=True)
class Happening:
    event: MemoryEvent
    claim: Claim
    words: str
    by: str
    undoable: bool


def claim_happenings(access: Access, revisions: list[Claim]) -> list[Happening]:
    """The audit trail of these revisions (as claim_revisions gives them), newest first."""
    access.require_scope(Scope.READ)
    by_id = {claim.pk: claim for claim in revisions}
    events = MemoryEvent.objects.select_related("actor_token").filter(
        owner=access.user, target_type="claim", target_id__in=list(by_id), erased_at__isnull=True
    )  # newest first (the model's ordering)
    undoable = {decision.pk for claim in revisions if (decision := latest_decision(claim)) is not None}
    return [
        Happening(
            event=event,
            claim=by_id[event.target_id],
            words=words_for(event.action),
            by=event_by(event),
            undoable=event.pk in undoable,
        )
        for event in events[:100]
    ]

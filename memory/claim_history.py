"""What happened to a claim, in words, for the claim page: the audit rows of every revision of it, newest
first, who did each, and whether the newest review decision can still be taken back (memory.services.review)."""

from __future__ import annotations

from dataclasses import dataclass

from memory.access import Access
from memory.models import Claim, MemoryEvent, Scope
from memory.services.review import latest_decision

WORDS = {
    "claim.extract": "Learned from a source",
    "claim.correct": "Corrected: a new revision replaced this one",
    "claim.pin": "Pinned",
    "claim.unpin": "Unpinned",
    "claim.expire": "Expired",
    "claim.retract": "Retracted",
    "claim.confirm": "Confirmed",
    "claim.flag_reverification": "Flagged to be checked again",
    "review.accept": "Accepted in review: it replaced the claim it conflicted with",
    "review.keep_old": "Dismissed in review: the claim it conflicted with was kept",
    "review.keep_both": "Kept in review, next to the claim it conflicted with",
    "review.undo": "A review decision was taken back: waiting for review again",
}


@dataclass(frozen=True)
class Happening:
    event: MemoryEvent
    claim: Claim
    words: str
    by: str
    undoable: bool


def _by(event: MemoryEvent) -> str:
    if event.actor_kind == "user":
        return "you" if event.actor_user_id == event.owner_id else "an admin"
    if event.actor_kind == "token":
        return f"token \u201c{event.actor_token.label}\u201d" if event.actor_token else "a token since deleted"
    return "the pipeline"


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
            words=WORDS.get(event.action, event.action),
            by=_by(event),
            undoable=event.pk in undoable,
        )
        for event in events[:100]
    ]

"""Agent sessions and handoffs (seeds/004).

A session is an ordered, append-only log: each event gets the next number under a row lock, so readers
page with `afterSequence` and never miss or repeat one. Appends are at-least-once (a replayed append adds
one more event), as in seeds/004. A handoff is a keyed memory of kind `handoff` under `handoff/<topic>`, so
it shares exactly-once saves, screening and history with every other keyed memory.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from memory.access import Access
from memory.errors import NotFound, ValidationFailed
from memory.models import AgentSession, Claim, ClaimKind, Scope, SessionEvent
from memory.screening import sanitize_text, sanitize_value
from memory.selectors import in_reach, memories_for_access, memories_in_reach, memory_for_access
from memory.services.audit import audit_record
from memory.services.memories import SaveAck, memory_save

HANDOFF_PREFIX = "handoff/"
MAX_EVENT_BYTES = 64 * 1024


def session_for_access(access: Access, session_id: str, *, for_update: bool = False) -> AgentSession:
    sessions = AgentSession.objects.select_related("partition")
    session: AgentSession = in_reach(
        access, sessions, session_id, noun="session", id_field="sessionId", for_update=for_update
    )
    return session


@transaction.atomic
def session_create(
    *, access: Access, title: str = "", agent: str = "", meta: dict[str, Any] | None = None
) -> AgentSession:
    access.require_scope(Scope.WRITE)
    session = AgentSession.objects.create(
        owner=access.user, partition=access.write_partition(), title=sanitize_text(title), agent=sanitize_text(agent),
        meta=sanitize_value(meta or {}),
    )  # fmt: skip
    audit_record(actor=access.actor, owner=access.user, action="session.create", target=session,
                 partition=session.partition, after={"agent": session.agent})  # fmt: skip
    return session


@transaction.atomic
def session_append_event(*, access: Access, session_id: str, kind: str, payload: Any) -> SessionEvent:
    """Append one event; it gets the session's next sequence number."""
    access.require_scope(Scope.WRITE)
    session = session_for_access(access, session_id, for_update=True)
    access.check_write(session.partition)
    payload = sanitize_value(payload)
    if len(repr(payload).encode()) > MAX_EVENT_BYTES:
        raise ValidationFailed("The event is too large.", details={"payload": [f"At most {MAX_EVENT_BYTES} bytes."]})
    session.last_sequence += 1
    session.save(update_fields=["last_sequence", "updated_at"])
    return SessionEvent.objects.create(
        owner=access.user, session=session, sequence=session.last_sequence, kind=sanitize_text(kind), payload=payload,
        appended_by=access.actor.kind,
    )  # fmt: skip


def session_events(access: Access, session_id: str, *, after_sequence: int = 0, limit: int = 100) -> list[SessionEvent]:
    session = session_for_access(access, session_id)
    return list(session.events.filter(sequence__gt=after_sequence).order_by("sequence")[:limit])


def sessions_for_access(access: Access, *, limit: int = 50) -> list[AgentSession]:
    access.require_scope(Scope.READ)
    return list(
        AgentSession.objects.select_related("partition")
        .filter(owner=access.user, partition__in=access.read_partitions)
        .order_by("-created_at", "-id")[:limit]
    )


def handoff_save(
    *, access: Access, topic: str, summary: str, next_steps: list[str], origin: str, event_id: str = ""
) -> SaveAck:
    """Leave a handoff for whoever continues this work: a summary and next steps under `topic`."""
    if not topic.strip():
        raise ValidationFailed("A handoff needs a topic.", details={"topic": ["Required."]})
    value = {"summary": summary, "nextSteps": next_steps}
    return memory_save(
        access=access, key=f"{HANDOFF_PREFIX}{topic.strip()}", value=value, kind=ClaimKind.HANDOFF, origin=origin,
        event_id=event_id,
    )  # fmt: skip


def handoff_load(access: Access, topic: str | None = None) -> Claim:
    """The current handoff for `topic`, or the newest handoff of any topic."""
    if topic:
        return memory_for_access(access, f"{HANDOFF_PREFIX}{topic}")
    newest = (
        memories_in_reach(access)
        .filter(kind=ClaimKind.HANDOFF, key__startswith=HANDOFF_PREFIX)
        .order_by("-recorded_at")
    ).first()
    if newest is None:
        raise NotFound("No handoff has been left.")
    return newest


def handoffs_for_access(access: Access, *, limit: int = 50) -> list[Claim]:
    return memories_for_access(access, kind=ClaimKind.HANDOFF, prefix=HANDOFF_PREFIX, limit=limit)

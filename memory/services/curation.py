"""coord_curate (seeds/004): an agent session becomes claims and tasks the way a conversation does.

The route: a session gets one derived Source of kind `session` (external id: the session id, in the session's
partition, so erasing that source erases what curation derived), and each of its events becomes a message
child of it (`<session id>/<sequence>`), exactly as a conversation's messages are children of the
conversation. The pipeline's own Extract and Reconcile steps then run over the children not extracted yet:
the configured extractor, the steward's policy, deduplication and evidence are the pipeline's, evidence points
at the event's message source, and a second run finds nothing left to extract, so it writes nothing.

Whose words: an event is the agent's own (role `assistant`, so at most an assistant-inferred candidate) unless
it is marked as the user's: kind `user_message`, or a payload with `"role": "user"`. Even then, an event
appended through a token is the agent's account of what the user said: its claims and tasks are
assistant-inferred (the candidate band, screened for instructions). Only events a person appended themselves
(the web UI, the admin) can yield `user_stated` claims, so a compromised agent cannot raise its own text to
the user's word.

The extractor runs before any lock is taken (it may be a remote model); the session row is locked only for
the writes, and if another curation wrote in between, this one answers CONFLICT.

A dry run is the same work inside a savepoint that is rolled back: it answers what applying would store
(policy, deduplication and supersession included), and nothing of it stays.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from memory.access import Access
from memory.errors import Conflict, ServiceError
from memory.extraction.base import Extraction
from memory.ids import new_id
from memory.models import (
    ActorKind,
    AgentSession,
    Claim,
    ClaimOrigin,
    Evidence,
    Operation,
    OperationStatus,
    Scope,
    SessionEvent,
    Source,
    SourceKind,
)
from memory.models.copy_rows import copy_rows
from memory.services.audit import audit_record
from memory.services.ingestion import IdentityRetired
from memory.services.memories import statement_for
from memory.services.sessions import session_for_access

USER_EVENT_KINDS = {"user_message", "user"}
ROLES = {"user", "assistant", "system", "tool"}
TEXT_FIELDS = ("text", "content", "message", "summary", "note")


@dataclass(frozen=True)
class CuratedClaim:
    claim: Claim
    created: bool  # False: an existing claim that gained evidence from this session
    sequences: list[int]  # the session events it rests on


@dataclass(frozen=True)
class Curation:
    session: AgentSession
    dry_run: bool
    extractor: str
    events: int  # events read in this run (0 when everything was curated before)
    counts: dict[str, int]
    claims: list[CuratedClaim] = field(default_factory=list)
    source_id: str = ""
    operation_id: str = ""


def session_curate(*, access: Access, session_id: str, dry_run: bool = True) -> Curation:
    """Turn the session's events not curated yet into claims and tasks (needs `write`). Re-running adds
    nothing; events appended since the last run are curated on the next one.

    The extractor (possibly a remote model taking seconds) reads the events first, without any lock; the
    session row is locked only for the writes, and a curation that ran in between is a CONFLICT."""
    access.require_scope(Scope.WRITE)
    session = session_for_access(access, session_id)
    access.check_write(session.partition)
    reading = _read_events(access, session)
    if reading is None:
        return Curation(session=session, dry_run=dry_run, extractor="", events=0, counts={})
    with transaction.atomic():
        session = session_for_access(access, session_id, for_update=True)  # one curation's writes at a time
        if _state(access, session) != reading.state:
            raise Conflict(
                "The session was curated by another call meanwhile; curate it again.", details={"sessionId": session.pk}
            )
        with transaction.atomic():
            curation = _store(access, session, reading, dry_run=dry_run)
            if dry_run:
                transaction.set_rollback(True)
        if not dry_run:
            audit_record(
                actor=access.actor, owner=access.user, action="session.curate", target=session,
                partition=session.partition,
                after={"sourceId": curation.source_id, "operationId": curation.operation_id, **curation.counts},
            )  # fmt: skip
    return curation


@dataclass
class _Reading:
    """What the extractor made of the unread events, before anything is written."""

    job: Any  # memory.pipeline.steps.Job, over a session source and event children that may not be saved yet
    new_source: bool
    new_children: list[Source]
    state: tuple[str, int, frozenset[str]]  # _state() when read: the writes go ahead only if it still holds
    counts: dict[str, int]


def _state(access: Access, session: AgentSession) -> tuple[str, int, frozenset[str]]:
    """The session source's id, the last event recorded under it, and its children not extracted yet."""
    source = _live_source(access, session)
    if source is None:
        return ("", 0, frozenset())
    recorded = source.children.aggregate(last=Max("ordinal"))["last"] or 0
    unread = source.children.live().filter(extracted_at__isnull=True).values_list("pk", flat=True)
    return (source.pk, recorded, frozenset(unread))


def _read_events(access: Access, session: AgentSession) -> _Reading | None:
    from memory.pipeline.steps import Extract, Job

    state = _state(access, session)
    source = _live_source(access, session)
    new_source = source is None
    if source is None:
        source = _new_session_source(access, session)
    events = list(session.events.filter(sequence__gt=state[1]).order_by("sequence"))
    new_children = [_event_source(access, session, source, event) for event in events]
    earlier = list(source.children.live().filter(pk__in=state[2]).order_by("ordinal")) if not new_source else []
    if not earlier and not new_children:
        return None
    operation = Operation(
        id=new_id("op"), owner=access.user, partition=session.partition, source=source,
        source_version=source.version, kind="curate", status=OperationStatus.PROCESSING, attempts=1,
    )  # fmt: skip
    job = Job(operation=operation, source=source, pending=[*earlier, *new_children])
    counts = Extract.read(job)
    relayed = {child.pk for child in job.pending if child.source_context.get("appendedBy") != ActorKind.USER}
    if job.extraction is not None and relayed:
        _as_inferred(job.extraction, relayed)
    if job.extraction is not None:
        from memory.services.reconcile import reconcile_vectors

        job.vectors = reconcile_vectors(job.extraction)  # like the extractor, before the session lock
    return _Reading(job=job, new_source=new_source, new_children=new_children, state=state, counts=counts)


def _as_inferred(extraction: Extraction, relayed: set[str]) -> None:
    """Events appended through a token are an agent's account: whatever role they claim, what they say is
    assistant-inferred (the candidate band, screened for instructions), never the user's own word."""
    reason = "An agent reported this in a session as the user's words; the user has not confirmed it."
    extraction.claims = [
        replace(claim, origin=ClaimOrigin.ASSISTANT_INFERRED, reason=claim.reason or reason)
        if claim.evidence.source_id in relayed
        else claim
        for claim in extraction.claims
    ]
    extraction.tasks = [
        replace(task, origin=ClaimOrigin.ASSISTANT_INFERRED) if task.evidence.source_id in relayed else task
        for task in extraction.tasks
    ]


def _store(access: Access, session: AgentSession, reading: _Reading, *, dry_run: bool) -> Curation:
    """The writes: the session source and its new event children, the receipt, and the pipeline's Reconcile."""
    from memory.pipeline.steps import Reconcile, StepFailed

    job = reading.job
    if reading.new_source:
        job.source.save(force_insert=True)
    copy_rows(Source, reading.new_children)
    operation = job.operation
    operation.started_at = timezone.now()
    operation.steps_done = [{"step": "extract"}]
    operation.save(force_insert=True)
    counts = dict(reading.counts)
    try:
        counts.update(Reconcile().run(job))
    except StepFailed as failure:
        raise ServiceError(failure.message, code=failure.code) from failure
    operation.steps_done = [*operation.steps_done, {"step": "reconcile"}]
    read = [child.pk for child in job.pending]  # empty when the extractor failed: read again next time
    operation.status, operation.finished_at, operation.counts = OperationStatus.COMPLETED, timezone.now(), counts
    operation.save(update_fields=["status", "finished_at", "counts", "steps_done"])
    return Curation(
        session=session, dry_run=dry_run, extractor=job.extractor, events=len(read), counts=counts,
        claims=_curated_claims(read), source_id="" if dry_run else job.source.pk,
        operation_id="" if dry_run else operation.pk,
    )  # fmt: skip


def _identity(access: Access, session: AgentSession) -> dict[str, Any]:
    return {"owner": access.user, "partition": session.partition, "kind": SourceKind.SESSION, "external_id": session.pk}


def _live_source(access: Access, session: AgentSession) -> Source | None:
    identity = _identity(access, session)
    if Source.objects.filter(**identity, identity_retired_at__isnull=False).exists():
        raise IdentityRetired(
            "What was curated from this session was erased with its identity retired; it is not curated again.",
            details={"sessionId": session.pk},
        )
    return Source.objects.live().filter(**identity).first()


def _new_session_source(access: Access, session: AgentSession) -> Source:
    """Not saved yet: the writes happen under the session lock (_store)."""
    return Source(
        id=new_id("src"), **_identity(access, session), title=session.title or f"Agent session {session.pk}",
        occurred_at=session.created_at,
        source_context={"origin": "agent_session", "sessionId": session.pk, "agent": session.agent},
    )  # fmt: skip


def _event_source(access: Access, session: AgentSession, source: Source, event: SessionEvent) -> Source:
    """The message child of one event (ordinal = the event's sequence), not saved yet."""
    text = _event_text(event)
    role = _event_role(event)
    return Source(
        id=new_id("src"),
        owner=access.user,
        partition=session.partition,
        kind=SourceKind.MESSAGE,
        scope=source.scope,
        external_id=f"{session.pk}/{event.sequence}",
        parent=source,
        ordinal=event.sequence,
        content=text,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        version=source.version,
        role=role,
        speaker="user" if role == "user" else (session.agent or role),
        message_id=f"{session.pk}#{event.sequence}",
        thread_id=session.pk,
        authored_at=event.created_at,
        occurred_at=event.created_at,
        source_context={"sessionEventKind": event.kind, "appendedBy": event.appended_by},
    )


def _event_text(event: SessionEvent) -> str:
    payload: Any = event.payload
    if isinstance(payload, dict):
        text = next((payload[name] for name in TEXT_FIELDS if isinstance(payload.get(name), str)), None)
        if text is not None:
            return str(text)
    return statement_for(payload)


def _event_role(event: SessionEvent) -> str:
    said = event.payload.get("role") if isinstance(event.payload, dict) else None
    if said in ROLES:
        return str(said)
    return "user" if event.kind.lower() in USER_EVENT_KINDS else "assistant"


def _curated_claims(source_ids: list[str]) -> list[CuratedClaim]:
    """The claims that rest on these event sources, and whether each is new or an existing one confirmed."""
    if not source_ids:
        return []
    sequences: dict[str, list[int]] = defaultdict(list)
    claims: dict[str, Claim] = {}
    evidence = Evidence.objects.filter(source_id__in=source_ids).select_related(
        "claim__subject", "claim__partition", "source"
    )
    for item in evidence.order_by("claim__recorded_at", "claim_id", "id"):
        claims.setdefault(item.claim_id, item.claim)
        sequences[item.claim_id].append(item.source.ordinal)
    earlier = set(
        Evidence.objects.filter(claim_id__in=list(claims))
        .exclude(source_id__in=source_ids)
        .values_list("claim_id", flat=True)
    )
    return [
        CuratedClaim(claim=claim, created=claim_id not in earlier, sequences=sorted(set(sequences[claim_id])))
        for claim_id, claim in claims.items()
    ]

"""coord_curate (seeds/004): an agent session becomes claims and tasks the way a conversation does.

The route: a session gets one derived Source of kind `session` (external id: the session id, in the session's
partition, so erasing that source erases what curation derived), and each of its events becomes a message
child of it (`<session id>/<sequence>`), exactly as a conversation's messages are children of the
conversation. The pipeline's own Extract and Reconcile steps then run over the children not extracted yet:
the configured extractor, the steward's policy, deduplication and evidence are the pipeline's, evidence points
at the event's message source, and a second run finds nothing left to extract, so it writes nothing.

Whose words: an event is the agent's own (role `assistant`, so at most an assistant-inferred candidate) unless
it is marked as the user's: kind `user_message`, or a payload with `"role": "user"`.

A dry run is the same work inside a savepoint that is rolled back: it answers what applying would store
(policy, deduplication and supersession included), and nothing of it stays.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from memory.access import Access
from memory.errors import ServiceError
from memory.models import (
    AgentSession,
    Claim,
    Evidence,
    Operation,
    OperationStatus,
    Scope,
    SessionEvent,
    Source,
    SourceKind,
)
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


@transaction.atomic
def session_curate(*, access: Access, session_id: str, dry_run: bool = True) -> Curation:
    """Turn the session's events not curated yet into claims and tasks (needs `write`). Re-running adds
    nothing; events appended since the last run are curated on the next one."""
    access.require_scope(Scope.WRITE)
    session = session_for_access(access, session_id, for_update=True)  # one curation of a session at a time
    access.check_write(session.partition)
    with transaction.atomic():
        source = _session_source(access, session)
        _record_events(access, session, source)
        if not source.children.filter(extracted_at__isnull=True).exists():
            transaction.set_rollback(True)  # nothing to read: not even an empty session source stays
            return Curation(session=session, dry_run=dry_run, extractor="", events=0, counts={})
        curation = _extract_and_reconcile(access, session, source, dry_run=dry_run)
        if dry_run:
            transaction.set_rollback(True)
    if not dry_run:
        audit_record(
            actor=access.actor, owner=access.user, action="session.curate", target=session,
            partition=session.partition,
            after={"sourceId": curation.source_id, "operationId": curation.operation_id, **curation.counts},
        )  # fmt: skip
    return curation


def _extract_and_reconcile(access: Access, session: AgentSession, source: Source, *, dry_run: bool) -> Curation:
    """The pipeline's Extract and Reconcile steps over the unread events, with a processing receipt."""
    from memory.pipeline.steps import Extract, Job, Reconcile, StepFailed

    operation = Operation.objects.create(
        owner=access.user, partition=session.partition, source=source, source_version=source.version,
        kind="curate", status=OperationStatus.PROCESSING, started_at=timezone.now(), attempts=1,
    )  # fmt: skip
    job = Job(operation=operation, source=source)
    counts: dict[str, int] = {}
    for step in (Extract(), Reconcile()):
        try:
            counts.update(step.run(job))
        except StepFailed as failure:
            raise ServiceError(failure.message, code=failure.code) from failure
        operation.steps_done = [*operation.steps_done, {"step": step.name}]
    read = [child.pk for child in job.pending]  # empty when the extractor failed: read again next time
    operation.status, operation.finished_at, operation.counts = OperationStatus.COMPLETED, timezone.now(), counts
    operation.save(update_fields=["status", "finished_at", "counts", "steps_done"])
    return Curation(
        session=session, dry_run=dry_run, extractor=job.extractor, events=len(read), counts=counts,
        claims=_curated_claims(read), source_id="" if dry_run else source.pk,
        operation_id="" if dry_run else operation.pk,
    )  # fmt: skip


def _session_source(access: Access, session: AgentSession) -> Source:
    identity = {
        "owner": access.user, "partition": session.partition, "kind": SourceKind.SESSION, "external_id": session.pk,
    }  # fmt: skip
    if Source.objects.filter(**identity, identity_retired_at__isnull=False).exists():
        raise IdentityRetired(
            "What was curated from this session was erased with its identity retired; it is not curated again.",
            details={"sessionId": session.pk},
        )
    source = Source.objects.live().filter(**identity).first()
    if source is None:
        source = Source.objects.create(
            **identity, title=session.title or f"Agent session {session.pk}", occurred_at=session.created_at,
            source_context={"origin": "agent_session", "sessionId": session.pk, "agent": session.agent},
        )  # fmt: skip
    return source


def _record_events(access: Access, session: AgentSession, source: Source) -> None:
    """A message child for every event not recorded yet (ordinal = the event's sequence)."""
    recorded = source.children.aggregate(last=Max("ordinal"))["last"] or 0
    events = list(session.events.filter(sequence__gt=recorded).order_by("sequence"))
    Source.objects.bulk_create(
        Source(
            owner=access.user,
            partition=session.partition,
            kind=SourceKind.MESSAGE,
            scope=source.scope,
            external_id=f"{session.pk}/{event.sequence}",
            parent=source,
            ordinal=event.sequence,
            content=(text := _event_text(event)),
            content_hash=hashlib.sha256(text.encode()).hexdigest(),
            version=source.version,
            role=(role := _event_role(event)),
            speaker="user" if role == "user" else (session.agent or role),
            message_id=f"{session.pk}#{event.sequence}",
            thread_id=session.pk,
            authored_at=event.created_at,
            occurred_at=event.created_at,
            source_context={"sessionEventKind": event.kind},
        )
        for event in events
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

"""Agent sessions and handoffs over REST (seeds/004)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.memories import MemoryOut, WriteAckOut, memory_json
from memory.api.openapi import count, many, mapping, one, shape, text, when
from memory.models import AgentSession, ClaimOrigin, SessionEvent
from memory.screening import wrap_untrusted
from memory.services import sessions
from memory.services.memories import statement_for

SESSION_EXAMPLE = {"sessionId": "ses_01kq54zhdye4a94mjmw0wev9jx"}
SessionOut = shape(
    "SessionOut", sessionId=text(), title=text(allow_blank=True), agent=text(allow_blank=True), meta=mapping(),
    partitionKey=text(), events=count(), createdAt=when(),
)  # fmt: skip
EventOut = shape("EventOut", sequence=count(), kind=text(), payload=text(), createdAt=when())
OneSessionOut = shape("OneSessionOut", session=one(SessionOut))


def session_json(session: AgentSession) -> dict[str, Any]:
    return {
        "sessionId": session.pk,
        "title": session.title,
        "agent": session.agent,
        "meta": session.meta,
        "partitionKey": session.partition.key,
        "events": session.last_sequence,
        "createdAt": session.created_at,
    }


def event_json(event: SessionEvent) -> dict[str, Any]:
    return {
        "sequence": event.sequence,
        "kind": event.kind,
        "payload": wrap_untrusted(statement_for(event.payload)),
        "createdAt": event.created_at,
    }


class SessionCreateIn(RequestSerializer):
    title = serializers.CharField(max_length=300, required=False, default="", allow_blank=True)
    agent = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    meta = serializers.DictField(required=False, default=dict)


class SessionIdIn(RequestSerializer):
    sessionId = serializers.CharField(max_length=40)


class AppendIn(SessionIdIn):
    kind = serializers.CharField(max_length=64)
    payload = serializers.JSONField()


class EventsIn(SessionIdIn):
    afterSequence = serializers.IntegerField(default=0, min_value=0)
    limit = serializers.IntegerField(default=100, min_value=1, max_value=500)


class SessionListIn(RequestSerializer):
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


class HandoffSaveIn(RequestSerializer):
    topic = serializers.CharField(max_length=200)
    summary = serializers.CharField(max_length=20000)
    nextSteps = serializers.ListField(child=serializers.CharField(max_length=2000), required=False, default=list,
                                      max_length=100)  # fmt: skip
    origin = serializers.ChoiceField(
        choices=[ClaimOrigin.ASSISTANT_INFERRED, ClaimOrigin.USER_STATED, ClaimOrigin.MANUAL],
        default=ClaimOrigin.ASSISTANT_INFERRED,
    )
    eventId = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class HandoffLoadIn(RequestSerializer):
    topic = serializers.CharField(max_length=200, required=False)


class SessionCreate(Endpoint):
    """Start a session (needs `write`)."""

    tool = "session.create"
    response_schema = OneSessionOut
    request_serializer = SessionCreateIn
    success_status = 201

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"session": session_json(sessions.session_create(access=access, **data))}


class SessionAppendEvent(Endpoint):
    """Append an event to a session; it gets the next sequence number (at-least-once on replays)."""

    tool = "session.append-event"
    response_schema = shape("AppendedEventOut", sessionId=text(), event=one(EventOut))
    request_serializer = AppendIn
    example_request = {**SESSION_EXAMPLE, "kind": "tool_call", "payload": {"tool": "search"}}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        event = sessions.session_append_event(
            access=access, session_id=data["sessionId"], kind=data["kind"], payload=data["payload"]
        )
        return {"sessionId": data["sessionId"], "event": event_json(event)}


class SessionGet(Endpoint):
    """A session and how many events it has."""

    tool = "session.get"
    response_schema = OneSessionOut
    request_serializer = SessionIdIn
    example_request = SESSION_EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"session": session_json(sessions.session_for_access(access, data["sessionId"]))}


class SessionList(Endpoint):
    """Sessions, newest first."""

    tool = "session.list"
    response_schema = shape("SessionsOut", sessions=many(SessionOut))
    request_serializer = SessionListIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"sessions": [session_json(s) for s in sessions.sessions_for_access(access, limit=data["limit"])]}


class SessionEvents(Endpoint):
    """A session's events in order, after `afterSequence`."""

    tool = "session.events"
    response_schema = shape("SessionEventsOut", sessionId=text(), events=many(EventOut))
    request_serializer = EventsIn
    example_request = SESSION_EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        events = sessions.session_events(
            access, data["sessionId"], after_sequence=data["afterSequence"], limit=data["limit"]
        )
        return {"sessionId": data["sessionId"], "events": [event_json(event) for event in events]}


class HandoffSave(Endpoint):
    """Leave a handoff (summary and next steps) under a topic; `eventId` makes it exactly-once."""

    tool = "handoff.save"
    response_schema = WriteAckOut
    request_serializer = HandoffSaveIn
    example_request = {"topic": "apollo-migration", "summary": "Schema done; data copy next.", "nextSteps": ["Copy"]}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        ack = sessions.handoff_save(
            access=access, topic=data["topic"], summary=data["summary"], next_steps=data["nextSteps"],
            origin=data["origin"], event_id=data["eventId"],
        )  # fmt: skip
        return ack.as_dict()


class HandoffLoad(Endpoint):
    """The current handoff for a topic, or the newest handoff of any topic."""

    tool = "handoff.load"
    response_schema = shape("HandoffOut", handoff=one(MemoryOut))
    request_serializer = HandoffLoadIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"handoff": memory_json(sessions.handoff_load(access, data.get("topic")))}


class HandoffList(Endpoint):
    """Current handoffs by topic."""

    tool = "handoff.list"
    response_schema = shape("HandoffsOut", handoffs=many(MemoryOut))
    request_serializer = SessionListIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        found = sessions.handoffs_for_access(access, limit=data["limit"])
        return {"handoffs": [memory_json(claim) for claim in found]}

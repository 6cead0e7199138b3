from __future__ import annotations
import json
import pytest
from memory.models import Claim, Source, Chunk, Node
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db


def test_explore(api: Api, owner: Persona) -> None:
    body = {"conversation": {"id": "chat-1", "messages": [
        {"id": "m1", "role": "user", "content": "I prefer morning meetings. I'll send the spec to Marcel by Friday.", "timestamp": "2026-04-22T09:00:00Z"},
        {"id": "m2", "role": "assistant", "content": "Noted, mornings it is.", "timestamp": "2026-04-22T09:00:05Z"},
    ]}}
    run_operation(api.post("/ingest/conversation", owner, body).json()["operationId"])
    for s in Source.objects.all():
        print("SRC", s.pk, s.kind, s.external_id, s.parent_id, s.thread_id, s.message_id, s.occurred_at, s.authored_at)
    for c in Chunk.objects.all():
        print("CHUNK", c.pk, c.source_id, repr(c.text), c.message_id, c.embedding_model)
    for n in Node.objects.all():
        print("NODE", n.pk, n.type, n.label, n.is_self, n.embedding_model)
    for c in Claim.objects.all():
        print("CLAIM", c.pk, c.kind, c.statement, c.status, c.subject_id, c.embedding_model, c.stated_at, c.recorded_at)
    r = api.post("/query/search", owner, {"query": "morning meetings", "conversationId": "chat-1"})
    print(json.dumps(r.json(), indent=1, default=str))
    r = api.post("/context/bootstrap", owner, {})
    print(json.dumps(r.json(), indent=1, default=str))
    r = api.post("/query/day", owner, {"date": "2026-04-22", "includeFormattedResult": True})
    print(json.dumps(r.json(), indent=1, default=str))
    r = api.post("/query/search", owner, {"query": ""})
    print(r.status_code, r.json())
    r = api.post("/query/search", owner, {"query": "x", "limit": 0, "bogus": 1})
    print(r.status_code, r.json())
    r = api.post("/query/search", owner, {"query": "x", "since": "nope"})
    print(r.status_code, r.json())
    r = api.post("/query/day", owner, {"date": "2026-02-30", "timeZone": "Mars/Base"})
    print(r.status_code, r.json())
    r = api.post("/query/recent-changes", owner, {"cursor": "zzz"})
    print(r.status_code, r.json())
    r = api.post("/query/search", owner, {"query": "x"}, headers={"X-Memory-Access-Scope": "bogus"})
    print(r.status_code, r.json())

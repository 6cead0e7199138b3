"""The embedder is never called while a job holds its source row lock, and a down embedder costs one call
per job, logged (issue 12, item 6). The embedding endpoint is a local stand-in that answers 503 and, on every
call, checks from its own connection whether the source row is locked."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction

from memory.embeddings import reset_embedder_cache
from memory.models import AgentSession, Claim, Operation, Source
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona
from tests.local_http import JsonHandler, serving

calls: list[bool] = []  # one entry per call: was the watched row locked at that moment?
watched: dict[str, str] = {}


def _source_locked() -> bool:
    try:
        with transaction.atomic():
            if "sessionId" in watched:
                AgentSession.objects.select_for_update(nowait=True).filter(pk=watched["sessionId"]).first()
            else:
                Source.objects.select_for_update(nowait=True).filter(pk=watched["sourceId"]).first()
        return False
    except OperationalError:
        return True
    finally:
        connection.close()


class DownEmbedder(JsonHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        calls.append(_source_locked() if watched else False)
        self.send_json(503, b'{"error": "loading"}')


@pytest.fixture
def down_embedder(settings: Any) -> Iterator[None]:
    calls.clear()
    watched.clear()
    with serving(DownEmbedder) as url:
        settings.EMBEDDER, settings.EMBEDDING_URL, settings.EMBEDDING_DIMENSIONS = "openai", url, 8
        reset_embedder_cache()
        yield
    reset_embedder_cache()


@pytest.mark.django_db(transaction=True)
def test_a_down_embedder_is_called_outside_the_source_lock_once_per_step(
    api: Api, owner: Persona, down_embedder: None, caplog: pytest.LogCaptureFixture
) -> None:
    text = "I prefer green tea. I work at Acme. I live in Utrecht. I prefer morning meetings. I weighed 78.2 kg."
    body = {"conversation": {"id": "c", "messages": [
        {"id": "m1", "role": "user", "content": text, "timestamp": "2026-04-22T10:00:00Z"},
    ]}}  # fmt: skip
    receipt = api.post("/ingest/conversation", owner, body).json()
    watched["sourceId"] = Operation.objects.get(pk=receipt["operationId"]).source_id
    with caplog.at_level(logging.WARNING):
        run_operation(receipt["operationId"])
    assert Claim.objects.filter(status="active").count() >= 5  # stored without vectors
    assert not Claim.objects.filter(embedding__isnull=False).exists()
    assert calls, "the stand-in was never called"
    assert not any(calls), f"{sum(calls)} of {len(calls)} embedder calls ran while the source row was locked"
    assert len(calls) <= 3, f"{len(calls)} calls to a down embedder for one job"  # embed, reconcile, index
    assert any(record.message == "reconcile.embedder_unavailable" for record in caplog.records)


@pytest.mark.django_db(transaction=True)
def test_curation_calls_the_embedder_before_it_locks_the_session(api: Api, owner: Persona, down_embedder: None) -> None:
    session = api.post("/session/create", owner, {"title": "work"}).json()["session"]["sessionId"]
    event = {"sessionId": session, "kind": "user_message", "payload": {"text": "I prefer dark roast coffee."}}
    assert api.post("/session/append-event", owner, event).status_code in (200, 201)
    watched["sessionId"] = session
    response = api.post("/coord/curate", owner, {"sessionId": session, "dryRun": False})
    assert response.status_code == 200, response.json()
    assert calls, "the stand-in was never called"
    assert not any(calls), f"{sum(calls)} of {len(calls)} embedder calls ran while the session row was locked"

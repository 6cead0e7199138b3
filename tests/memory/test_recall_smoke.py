"""Smoke: a conversation and a reference document through the pipeline, then personal and reference search."""

from __future__ import annotations

import pytest

from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db


def test_search_finds_the_users_words_with_evidence_and_keeps_reference_apart(api: Api, owner: Persona) -> None:
    body = {"conversation": {"id": "chat-1", "messages": [
        {"id": "m1", "role": "user", "content": "I prefer morning meetings.", "timestamp": "2026-04-22T09:00:00Z"},
        {"id": "m2", "role": "assistant", "content": "Noted, mornings it is.", "timestamp": "2026-04-22T09:00:05Z"},
    ]}}  # fmt: skip
    run_operation(api.post("/ingest/conversation", owner, body).json()["operationId"])
    reference = {"document": {"id": "handbook", "title": "Meeting handbook", "scope": "reference",
                              "content": "Morning meetings should start at nine and end by ten."}}  # fmt: skip
    run_operation(api.post("/ingest/document", owner, reference).json()["operationId"])
    answer = api.post("/query/search", owner, {"query": "morning meetings"}).json()
    first = answer["searchResults"][0]
    assert (first["type"], first["text"]) == ("claim", "Prefers morning meetings.")
    assert first["evidence"][0]["messageId"] == "m1"
    assert all("handbook" not in str(result) and "nine" not in result["text"] for result in answer["searchResults"])
    assert answer["formattedResult"].startswith("<assistant_memory as_of=")
    assert "Prefers morning meetings." in answer["formattedResult"]
    found = api.post("/query/reference", owner, {"query": "morning meetings"}).json()["searchResults"]
    assert found and all(result["type"] != "claim" for result in found)
    assert "nine" in found[0]["text"]

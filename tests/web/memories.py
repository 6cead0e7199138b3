"""Memories made the way a person makes them: a conversation ingested over REST and run through the pipeline."""

from __future__ import annotations

from typing import Any

from memory.models import Claim, Source
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona


def say(api: Api, persona: Persona, *texts: str, conversation: str = "chat") -> None:
    """The person's turns of one conversation, processed at once."""
    first = Source.objects.filter(kind="message").count() + 1
    messages: list[dict[str, Any]] = [
        {"id": f"m{n}", "role": "user", "content": text, "timestamp": f"2026-04-22T10:{n // 60:02d}:{n % 60:02d}Z"}
        for n, text in enumerate(texts, start=first)
    ]
    receipt = api.post("/ingest/conversation", persona, {"conversation": {"id": conversation, "messages": messages}})
    assert receipt.status_code in (200, 201, 202), receipt.content
    run_operation(receipt.json()["operationId"])


def claim(statement: str) -> Claim:
    return Claim.objects.select_related("partition").get(statement=statement)

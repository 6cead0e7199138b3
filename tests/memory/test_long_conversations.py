"""A chat host sends each new turn of a long conversation as it happens: accepting that turn and processing it
read the turns it brings, never the whole conversation again (docs/benchmarks.md, issue 18, sixth pass)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from bench.long_conversation import Statements
from memory.models import Chunk, Source
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona, error_code

pytestmark = pytest.mark.django_db

# Turns the extractor finds nothing in: what a job reads then is the conversation, not claims or tasks.
FILLER = ("Okay.", "Sounds good.", "Right.", "Thanks.")


@contextmanager
def rows_read() -> Iterator[Statements]:
    """The rows every SELECT returned while the block ran (the benchmark's own counter)."""
    counter = Statements()
    with connection.execute_wrapper(counter):
        yield counter


def turns(first: int, count: int) -> list[dict[str, str]]:
    return [
        {"id": f"m{n}", "role": "user" if n % 2 == 0 else "assistant", "content": FILLER[n % len(FILLER)]}
        for n in range(first, first + count)
    ]


def post(api: Api, owner: Persona, messages: list[dict[str, str]]) -> dict[str, Any]:
    response = api.post("/ingest/conversation", owner, {"conversation": {"id": "long", "messages": messages}})
    assert response.status_code == 202, response.content
    receipt: dict[str, Any] = response.json()
    return receipt


def one_more_turn(api: Api, owner: Persona, number: int) -> tuple[int, int]:
    """Rows read accepting turn `number` and running its job."""
    with rows_read() as accepted:
        receipt = post(api, owner, turns(number, 1))
    with rows_read() as processed:
        run_operation(receipt["operationId"])
    return accepted.rows, processed.rows


def test_a_new_turn_reads_as_many_rows_in_a_conversation_of_60_turns_as_in_one_of_6(api: Api, owner: Persona) -> None:
    run_operation(post(api, owner, turns(0, 5))["operationId"])
    short = one_more_turn(api, owner, 5)
    run_operation(post(api, owner, turns(6, 54))["operationId"])
    long = one_more_turn(api, owner, 60)
    assert long == short
    turn = Source.objects.live().get(message_id="m60")
    assert turn.extracted_at is not None
    assert Chunk.objects.get(source=turn).embedding is not None


def test_a_turn_sent_again_in_a_long_conversation_is_still_deduplicated(api: Api, owner: Persona) -> None:
    first = post(api, owner, turns(0, 30))
    again = post(api, owner, turns(28, 3))  # two known turns and a new one
    assert again["operationId"] != first["operationId"]
    assert Source.objects.live().filter(kind="message").count() == 31
    changed = turns(29, 1)
    changed[0]["content"] = "Something else."
    response = api.post("/ingest/conversation", owner, {"conversation": {"id": "long", "messages": changed}})
    assert response.status_code == 409
    assert error_code(response) == "CONFLICT"
    assert response.json()["error"]["details"]["messageIds"] == ["m29"]


def test_turns_no_job_has_read_yet_are_all_read_by_the_next_job(api: Api, owner: Persona) -> None:
    first = post(api, owner, turns(0, 3))
    second = post(api, owner, turns(3, 2))
    run_operation(second["operationId"])  # the later receipt runs first: it reads the earlier turns too
    assert not Source.objects.live().filter(kind="message", extracted_at__isnull=True).exists()
    assert Chunk.objects.filter(embedding__isnull=False).count() == 5
    run_operation(first["operationId"])
    assert Chunk.objects.count() == 5  # nothing chunked twice

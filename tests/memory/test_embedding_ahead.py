"""A worker running one job at a time embeds the next queued job's chunk texts while a job finishes (issue 18), and
that job's chunk step takes those vectors instead of embedding its texts again (memory.pipeline.ahead). The
read-ahead runs on a thread of its own with its own connection: the data is committed."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from django.conf import settings as django_settings

from config.celery import note_jobs_at_once
from memory.access import access_for_user
from memory.embeddings import get_embedder
from memory.models import Chunk, Operation
from memory.pipeline import ahead
from memory.pipeline.runner import run_operation
from memory.pipeline.steps import Job, chunk_texts
from memory.services import embeddings
from memory.services.erasure import source_erase
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def one_job_at_a_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(ahead, "jobs_at_once", 1)
    yield
    ahead.let_go()  # its connection closed: the test database can be emptied or dropped


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The texts of each `texts_embed` call (the chunk step embeds through it), as they are made."""
    calls: list[list[str]] = []
    real = embeddings.texts_embed

    def recorded(texts: list[str], **kwargs: Any) -> Any:
        calls.append(list(texts))
        return real(texts, **kwargs)

    monkeypatch.setattr(embeddings, "texts_embed", recorded)
    return calls


def _conversation(name: str, *lines: str) -> dict[str, Any]:
    messages = [
        {"id": f"{name}-{n}", "role": "user" if n % 2 else "assistant", "content": line,
         "timestamp": f"2026-04-22T10:0{n}:00Z"}
        for n, line in enumerate(lines, start=1)
    ]  # fmt: skip
    return {"conversation": {"id": name, "messages": messages}}


def _queued(api: Api, owner: Persona, *bodies: dict[str, Any]) -> list[dict[str, Any]]:
    return [api.post("/ingest/conversation", owner, body).json() for body in bodies]


def _texts(operation_id: str) -> list[str]:
    operation = Operation.objects.select_related("source__owner", "source__partition").get(pk=operation_id)
    assert operation.source is not None
    return chunk_texts(Job(operation=operation, source=operation.source))


def _assert_made(chunk: Chunk, own: list[float], before: list[float] | None) -> None:
    """The chunk's vector is the one its job makes: the turn's own, leaning towards the turn before by half."""
    expected = own if before is None else [a + 0.5 * b for a, b in zip(own, before, strict=True)]
    norm = math.sqrt(sum(value * value for value in expected))
    assert chunk.embedding is not None and chunk.embedding_model == get_embedder().model_id
    cosine = sum(a * b / norm for a, b in zip(chunk.embedding, expected, strict=True))
    assert math.isclose(cosine, 1.0, abs_tol=1e-5), (chunk.text, cosine)


def _held() -> Any:
    ahead.drained()
    return ahead._ahead.held if ahead._ahead is not None else None


def test_the_next_queued_job_is_embedded_ahead_and_its_chunk_step_takes_the_vectors(
    api: Api, owner: Persona, one_job_at_a_time: None, embedded: list[list[str]]
) -> None:
    first, second = _queued(
        api, owner,
        _conversation("c1", "I'll plan the garden on Friday.", "Noted: the garden on Friday."),
        _conversation("c2", "My sister Lotte lives in Utrecht.", "Utrecht, noted.", "She plays the cello."),
    )  # fmt: skip
    wanted = _texts(second["operationId"])
    run_operation(first["operationId"])
    held = _held()
    assert held is not None and held.operation_id == second["operationId"]
    assert list(held.by_text) == wanted  # the second job's texts, made as its chunk step makes them

    embedded.clear()
    run_operation(second["operationId"])
    assert embedded[0] == []  # the chunk step embedded nothing itself (later calls: the claims' statements)
    chunks = list(Chunk.objects.filter(source__parent_id=second["sourceId"]).order_by("authored_at"))
    assert len(chunks) == 3
    # The vectors are the ones the job would have made: each turn's own, leaning towards the turn before by half.
    own = get_embedder().embed_documents([chunk.embedding_text for chunk in chunks])
    for index, chunk in enumerate(chunks):
        _assert_made(chunk, own[index], own[index - 1] if index else None)
    # Taken once: nothing is held after the chunk step (the last job had no next one to read ahead).
    assert _held() is None


def test_a_vector_made_ahead_is_used_for_its_own_text_only(
    api: Api, owner: Persona, one_job_at_a_time: None, embedded: list[list[str]]
) -> None:
    (receipt,) = _queued(api, owner, _conversation("c1", "I'll plan the garden on Friday."))
    wanted = _texts(receipt["operationId"])
    foreign = [1.0] + [0.0] * 383
    ahead._this_process().held = ahead._Held(receipt["operationId"], get_embedder().model_id, {"another text": foreign})
    run_operation(receipt["operationId"])
    assert embedded[0] == wanted
    (chunk,) = Chunk.objects.filter(source__parent_id=receipt["sourceId"])
    assert chunk.embedding is not None and list(chunk.embedding) != foreign
    assert _held() is None


def test_what_was_made_ahead_for_another_job_is_dropped_not_used(
    api: Api, owner: Persona, one_job_at_a_time: None, embedded: list[list[str]]
) -> None:
    (receipt,) = _queued(api, owner, _conversation("c1", "I'll plan the garden on Friday."))
    (text,) = _texts(receipt["operationId"])
    foreign = [1.0] + [0.0] * 383
    ahead._this_process().held = ahead._Held("op_another", get_embedder().model_id, {text: foreign})
    run_operation(receipt["operationId"])
    assert embedded[0] == [text]
    (chunk,) = Chunk.objects.filter(source__parent_id=receipt["sourceId"])
    assert list(chunk.embedding) != foreign
    assert _held() is None


def test_held_vectors_are_dropped_when_no_job_takes_them(
    api: Api, owner: Persona, one_job_at_a_time: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ahead, "KEEP_S", 0.3)
    monkeypatch.setattr(ahead, "_ahead", None)  # a thread that waits by this KEEP_S
    first, _ = _queued(
        api, owner, _conversation("c1", "I'll plan the garden on Friday."), _conversation("c2", "Lotte plays cello.")
    )
    run_operation(first["operationId"])
    assert _held() is not None
    deadline = time.monotonic() + 10
    while _held() is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _held() is None


def test_an_erased_conversation_is_not_read_ahead(api: Api, owner: Persona, one_job_at_a_time: None) -> None:
    first, second = _queued(
        api,
        owner,
        _conversation("c1", "I'll plan the garden on Friday."),
        _conversation("c2", "The safe code is 4417."),
    )
    assert owner.user is not None
    source_erase(access=access_for_user(user=owner.user), source_id=second["sourceId"])
    run_operation(first["operationId"])
    assert _held() is None


@pytest.mark.parametrize(("jobs", "enabled"), [(2, True), (1, False)])
def test_no_reading_ahead_where_jobs_run_side_by_side_or_it_is_turned_off(
    api: Api, owner: Persona, settings: Any, monkeypatch: pytest.MonkeyPatch, jobs: int, enabled: bool
) -> None:
    monkeypatch.setattr(ahead, "jobs_at_once", jobs)
    settings.PIPELINE_EMBED_AHEAD = enabled
    monkeypatch.setattr(ahead, "_ahead", None)
    first, _ = _queued(
        api, owner, _conversation("c1", "I'll plan the garden on Friday."), _conversation("c2", "Lotte plays cello.")
    )
    run_operation(first["operationId"])
    assert ahead._ahead is None  # no thread was even started


@pytest.mark.parametrize(
    ("options", "jobs"),
    [
        ({"concurrency": 1, "pool_cls": "prefork"}, 1),
        ({"concurrency": 2, "pool_cls": "prefork"}, 2),
        ({"concurrency": 4, "pool_cls": "solo"}, 1),
        ({"concurrency": 3, "pool_cls": "threads"}, 3),
    ],
)
def test_the_worker_notes_how_many_jobs_it_runs_at_once(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], jobs: int
) -> None:
    monkeypatch.setattr(ahead, "jobs_at_once", None)
    note_jobs_at_once(options=options)
    assert ahead.jobs_at_once == jobs


@pytest.mark.server
def test_a_worker_of_one_pool_process_reads_the_next_job_ahead(api: Api, owner: Persona) -> None:
    """Through a real worker (one pool process, as the test worker runs): every receipt completes, the jobs after
    the first take their chunk vectors from the read-ahead, and the vectors are the ones each job would make."""
    from django.db import connection, transaction

    from memory.access import access_for_token
    from memory.services.ingestion import ConversationIn, MessageIn, ingest_conversation
    from tests.memory.test_pipeline_worker import wait_for_status
    from tests.process import celery_worker

    assert owner.token is not None
    access = access_for_token(token=owner.token, user_id=None, partition_key=None, workspace=False)
    lines = ["I'll plan the garden on Friday.", "Lotte plays the cello.", "The safe code is 4417.", "Rome in May."]
    with transaction.atomic():  # every receipt queued before the worker gets the first job
        receipts = [
            ingest_conversation(
                access=access,
                conversation=ConversationIn(
                    id=f"c{n}",
                    messages=[MessageIn(id=f"c{n}-{k}", role="user", content=f"{line} ({k})") for k in range(3)],
                ),
            ).operation
            for n, line in enumerate(lines)
        ]
    with celery_worker(connection.settings_dict["NAME"]) as worker:
        done = [wait_for_status(api, owner, receipt.pk, {"completed", "failed"}) for receipt in receipts]
    assert [receipt["status"] for receipt in done] == ["completed"] * len(lines)
    arguments = cast(list[str], worker.args)
    hostname = arguments[arguments.index("--hostname") + 1]
    log = (Path(django_settings.DATA_DIR) / f"worker-{hostname.split('@')[0]}.log").read_text()
    taken = [json.loads(line) for line in log.splitlines() if '"pipeline.vectors_ahead"' in line]
    # The first job had nothing read ahead; each later one took the texts of its three turns, embedded ahead.
    assert sorted(entry["operationId"] for entry in taken) == sorted(receipt.pk for receipt in receipts[1:])
    assert all(entry["texts"] == 3 for entry in taken)
    for receipt in receipts:
        chunks = list(Chunk.objects.filter(source__parent_id=receipt.source_id).order_by("authored_at"))
        own = get_embedder().embed_documents([chunk.embedding_text for chunk in chunks])
        for index, chunk in enumerate(chunks):
            _assert_made(chunk, own[index], own[index - 1] if index else None)

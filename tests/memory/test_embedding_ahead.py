"""A worker running one job at a time embeds the next queued job's chunk texts while a job runs (issue 18), and
that job's chunk step takes those vectors instead of embedding its texts again (memory.pipeline.ahead). The
read-ahead runs on a thread of its own with its own connection: the data is committed."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from celery.concurrency import prefork, solo, thread
from django.conf import settings as django_settings
from django.utils import timezone

from config.celery import note_jobs_at_once
from memory.access import access_for_user
from memory.embeddings import get_embedder
from memory.models import Chunk, Operation, OperationStatus
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


def _conversation(name: str, *lines: str, first: int = 1) -> dict[str, Any]:
    messages = [
        {"id": f"{name}-{n}", "role": "user" if n % 2 else "assistant", "content": line,
         "timestamp": f"2026-04-22T10:0{n}:00Z"}
        for n, line in enumerate(lines, start=first)
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


def _held_for() -> str | None:
    held = ahead.held()
    return held[0] if held is not None else None


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
    # The second job's texts, made as its chunk step makes them.
    assert ahead.held() == (second["operationId"], wanted)

    embedded.clear()
    run_operation(second["operationId"])
    assert embedded[0] == []  # the chunk step embedded nothing itself (later calls: the claims' statements)
    chunks = list(Chunk.objects.filter(source__parent_id=second["sourceId"]).order_by("authored_at"))
    assert len(chunks) == 3
    own = get_embedder().embed_documents([chunk.embedding_text for chunk in chunks])
    for index, chunk in enumerate(chunks):
        _assert_made(chunk, own[index], own[index - 1] if index else None)
    # Taken once: nothing is held after the chunk step (the last job had no next one to read ahead).
    assert ahead.held() is None


def test_turns_the_running_job_chunked_are_not_read_ahead_again_for_the_next_receipt(
    api: Api, owner: Persona, one_job_at_a_time: None, embedded: list[list[str]]
) -> None:
    """Two receipts of one conversation: the first job chunks every unread turn, the second's too. Read ahead once
    the first job's chunks are stored, the second job has no turn left to chunk, so nothing is embedded twice."""
    first, second = _queued(
        api,
        owner,
        _conversation("c1", "I'll plan the garden on Friday."),
        _conversation("c1", "Lotte plays cello.", first=2),
    )
    run_operation(first["operationId"])
    assert embedded[0] == ["I'll plan the garden on Friday.", "Lotte plays cello."]
    assert ahead.held() is None
    embedded.clear()
    run_operation(second["operationId"])
    assert embedded[0] == []


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
    assert ahead.held() is None


@pytest.mark.parametrize("made_for", ["another receipt", "another model"])
def test_what_was_made_ahead_for_another_job_or_model_is_dropped_not_used(
    api: Api, owner: Persona, one_job_at_a_time: None, embedded: list[list[str]], made_for: str
) -> None:
    (receipt,) = _queued(api, owner, _conversation("c1", "I'll plan the garden on Friday."))
    (text,) = _texts(receipt["operationId"])
    foreign = [1.0] + [0.0] * 383
    operation_id, model_id = receipt["operationId"], get_embedder().model_id
    if made_for == "another receipt":
        operation_id = "op_another"
    else:
        model_id = "another-model@1"
    ahead._this_process().held = ahead._Held(operation_id, model_id, {text: foreign})
    run_operation(receipt["operationId"])
    assert embedded[0] == [text]
    (chunk,) = Chunk.objects.filter(source__parent_id=receipt["sourceId"])
    assert list(chunk.embedding) != foreign
    assert ahead.held() is None


def test_held_vectors_are_dropped_when_no_job_takes_them(
    api: Api, owner: Persona, one_job_at_a_time: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ahead, "KEEP_S", 2.0)
    monkeypatch.setattr(ahead, "_ahead", None)  # a thread that waits by this KEEP_S
    (receipt,) = _queued(api, owner, _conversation("c1", "I'll plan the garden on Friday."))
    ahead.embed_next_job(besides=[])
    assert _held_for() == receipt["operationId"]
    deadline = time.monotonic() + 20
    while ahead.held() is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ahead.held() is None


@pytest.mark.parametrize("gone", ["erased", "replaced"])
def test_a_receipt_erased_or_replaced_is_skipped_for_the_next_one(
    api: Api, owner: Persona, one_job_at_a_time: None, gone: str
) -> None:
    first, second, third = _queued(
        api, owner,
        _conversation("c1", "I'll plan the garden."),
        _conversation("c2", "The safe code is 4417."),
        _conversation("c3", "Lotte plays cello."),
    )  # fmt: skip
    assert owner.user is not None
    if gone == "erased":
        source_erase(access=access_for_user(user=owner.user), source_id=second["sourceId"])
    else:
        body = _conversation("c2", "The safe code changed.")
        receipt = api.post("/ingest/conversation", owner, {**body, "updateExisting": True}).json()
        assert receipt["sourceId"] and receipt["operationId"] != second["operationId"]
    run_operation(first["operationId"])
    held = ahead.held()
    assert held is not None and held[0] == third["operationId"]
    assert not any("4417" in text for text in held[1])


def test_nothing_is_read_ahead_while_another_process_runs_a_job(
    api: Api, owner: Persona, one_job_at_a_time: None
) -> None:
    first, second, third = _queued(
        api, owner,
        _conversation("c1", "I'll plan the garden."),
        _conversation("c2", "Lotte plays cello."),
        _conversation("c3", "Rome in May."),
    )  # fmt: skip
    running = Operation.objects.filter(pk=second["operationId"])
    running.update(status=OperationStatus.PROCESSING, runner="elsewhere:1", heartbeat_at=timezone.now())
    run_operation(first["operationId"])
    assert ahead.held() is None
    # A job started moments ago and not beaten yet is running too (operation_runner_gone's rule).
    running.update(heartbeat_at=None, started_at=timezone.now())
    ahead.embed_next_job(besides=[])
    assert ahead.held() is None
    # A runner gone long ago (no heartbeat) runs nothing: the next job is read ahead again.
    running.update(heartbeat_at=timezone.now() - timedelta(hours=1))
    ahead.embed_next_job(besides=[])
    assert _held_for() == third["operationId"]


@pytest.mark.parametrize(
    ("jobs", "enabled", "embedder"), [(2, True, "minilm"), (1, False, "minilm"), (1, True, "openai")]
)
def test_no_reading_ahead_where_jobs_run_side_by_side_it_is_off_or_the_embedder_is_remote(
    settings: Any, monkeypatch: pytest.MonkeyPatch, jobs: int, enabled: bool, embedder: str
) -> None:
    monkeypatch.setattr(ahead, "jobs_at_once", jobs)
    monkeypatch.setattr(ahead, "_ahead", None)
    settings.PIPELINE_EMBED_AHEAD = enabled
    settings.EMBEDDER = embedder
    assert not ahead.reading_ahead()
    ahead.embed_next_job(besides=[])
    assert ahead._ahead is None  # no thread was even started


@pytest.mark.parametrize(
    ("pool", "concurrency", "autoscale", "jobs"),
    [
        (prefork.TaskPool, 1, None, 1),
        (prefork.TaskPool, 2, None, 2),
        (prefork.TaskPool, 1, [4, 1], 4),
        (solo.TaskPool, 4, None, 1),
        (thread.TaskPool, 3, None, 3),
    ],
)
def test_the_worker_notes_how_many_jobs_it_runs_at_once(
    monkeypatch: pytest.MonkeyPatch, pool: type, concurrency: int, autoscale: list[int] | None, jobs: int
) -> None:
    monkeypatch.setattr(ahead, "jobs_at_once", None)
    note_jobs_at_once(instance=SimpleNamespace(pool_cls=pool, concurrency=concurrency, autoscale=autoscale))
    assert ahead.jobs_at_once == jobs


@pytest.mark.server
def test_a_worker_of_one_pool_process_reads_the_next_job_ahead(api: Api, owner: Persona) -> None:
    """Through a real worker (one pool process, as the test worker runs): every receipt completes, the jobs after
    the first take their chunk vectors from the read-ahead, and the vectors are the ones each job would make."""
    from django.db import connection

    from tests.memory.test_pipeline_worker import wait_for_status
    from tests.process import celery_worker

    lines = ["I'll plan the garden on Friday.", "Lotte plays the cello.", "The safe code is 4417.", "Rome in May."]
    # Every receipt queued (each in a transaction of its own: oldest first) before the worker gets the first job.
    receipts = [_queued(api, owner, _conversation(f"c{n}", line, f"{line} Yes.", f"{line} Sure."))[0]
                for n, line in enumerate(lines)]  # fmt: skip
    with celery_worker(connection.settings_dict["NAME"]) as worker:
        done = [wait_for_status(api, owner, receipt["operationId"], {"completed", "failed"}) for receipt in receipts]
    assert [receipt["status"] for receipt in done] == ["completed"] * len(lines)
    arguments = cast(list[str], worker.args)
    hostname = arguments[arguments.index("--hostname") + 1]
    log = (Path(django_settings.DATA_DIR) / f"worker-{hostname.split('@')[0]}.log").read_text()
    taken = [json.loads(line) for line in log.splitlines() if '"pipeline.vectors_ahead"' in line]
    # The first job had nothing read ahead; each later one took the texts of its three turns, embedded ahead.
    assert sorted(entry["operationId"] for entry in taken) == sorted(receipt["operationId"] for receipt in receipts[1:])
    assert all(entry["texts"] == 3 for entry in taken)
    for receipt in receipts:
        chunks = list(Chunk.objects.filter(source__parent_id=receipt["sourceId"]).order_by("authored_at"))
        own = get_embedder().embed_documents([chunk.embedding_text for chunk in chunks])
        for index, chunk in enumerate(chunks):
            _assert_made(chunk, own[index], own[index - 1] if index else None)

"""`manage.py embeddings status|probe|reindex`: coverage, a live probe, a resumable reindex (chunks here; every
kind in tests/maintenance/test_vectors.py)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.models import Chunk, Source
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("embeddings", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def processed(api: Api, owner: Persona) -> None:
    text = "\n\n".join(f"Paragraph {n} about the garden and the spring planting schedule." * 8 for n in range(6))
    receipt = api.post("/ingest/document", owner, {"document": {"id": "garden", "content": text}}).json()
    run_operation(receipt["operationId"])


def test_probe_reports_the_model(db: None) -> None:
    assert "minilm-l6-v2-int8: 384 dimensions" in run("probe")


def test_status_counts_vectors_by_model(processed: None) -> None:
    total = Chunk.objects.count()
    assert total > 1
    output = run("status")
    assert f"chunks: {total}, current model {total}, other model 0, missing 0" in output


def test_reindex_fills_missing_and_foreign_vectors_and_deletes_nothing(processed: None) -> None:
    chunks = list(Chunk.objects.order_by("id"))
    Chunk.objects.filter(pk=chunks[0].pk).update(embedding=None, embedding_model="")
    Chunk.objects.filter(pk=chunks[1].pk).update(embedding_model="openai:old-model")
    assert "2 row(s) need" in run("status")
    output = run("reindex", "--batch-size", "1")
    assert "chunks: embedded 1/2" in output and "reindex complete: 2 row(s) embedded" in output
    assert Chunk.objects.filter(embedding_model="minilm-l6-v2-int8").count() == len(chunks)
    assert Source.objects.count() == 1
    assert "reindex complete: 0 row(s)" in run("reindex")


def test_bad_arguments_are_refused(db: None) -> None:
    with pytest.raises(CommandError):
        run("reindex", "--batch-size", "0")
    with pytest.raises(CommandError):
        run("explode")


def test_an_unavailable_embedder_is_a_clear_error(db: None, settings) -> None:
    from memory.embeddings import reset_embedder_cache

    settings.EMBEDDER = "nonsense"
    reset_embedder_cache()
    try:
        with pytest.raises(CommandError, match="unavailable"):
            run("probe")
    finally:
        settings.EMBEDDER = "minilm"
        reset_embedder_cache()

"""The pinned MiniLM model rewritten locally so its matrix products run in int8 (memory/embeddings/minilm_rewrite.py):
its vectors must agree with the pinned model's, and the rewrite is generated data cached under the data directory."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory.embeddings import minilm_rewrite, reset_embedder_cache
from memory.embeddings.minilm import (
    MODEL_SHA256,
    MiniLMEmbedder,
    _load_runtime,
    _packaged_model_path,
    int8_matmul_pending,
    int8_model_prepared,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
# Chat turns with their context as the pipeline embeds them, claims, node cards, queries, Dutch, odd input and a
# text past the 256-token truncation.
TEXTS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "powerful. Melanie: That's great! What did you paint last weekend?",
    "I need to finish the quarterly report on Friday, and I'd like to plan the garden too.",
    "I'll send the spec to Marcel by Friday.",
    "Marcel will review the budget next week.",
    "Ik stuur de offerte uiterlijk vrijdag naar Ilse.",
    "Weight: 81.5 kg on 2026-11-30.",
    "Person: Marcel",
    "Task: the spec",
    "Topic: garden",
    "when do I plan the garden?",
    "What did Caroline research about adoption agencies?",
    "x",
    "🙂 ok",
    "SELECT * FROM claims; -- not an attack, just text",
    "the quarterly planning review of the garden project " * 60,
]


def cosine(a: list[float], b: list[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(math.fsum(x * x for x in a) * math.fsum(y * y for y in b))


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, settings: Any) -> Iterator[Path]:
    settings.DATA_DIR = tmp_path
    reset_embedder_cache()
    yield tmp_path
    reset_embedder_cache()


def test_the_rewritten_model_gives_the_pinned_models_vectors(settings: Any) -> None:
    settings.EMBEDDING_INT8_MATMUL = True
    rewritten = MiniLMEmbedder(batch_size=8)
    fast = rewritten.embed_documents(TEXTS)  # the setting is read when the model loads, on first use
    settings.EMBEDDING_INT8_MATMUL = False
    pinned = MiniLMEmbedder(batch_size=8)
    reference = pinned.embed_documents(TEXTS)

    assert (rewritten.variant, pinned.variant) == ("int8-matmul", "pinned")
    assert min(cosine(a, b) for a, b in zip(fast, reference, strict=True)) >= 0.999
    # A query alone (batch of one) too: the web process embeds queries one at a time.
    assert cosine(rewritten.embed_query(TEXTS[10]), pinned.embed_query(TEXTS[10])) >= 0.999


def test_the_rewrite_is_cached_in_the_data_directory_and_rebuilt_when_damaged(data_dir: Path, settings: Any) -> None:
    settings.EMBEDDING_INT8_MATMUL = True
    model_path = _packaged_model_path()
    cache_dir = data_dir / "models"

    first = _load_runtime(model_path, MODEL_SHA256, compact=True)
    cached_path = minilm_rewrite.cached_file(cache_dir, MODEL_SHA256)
    assert first.variant == "int8-matmul"
    assert cached_path is not None
    cached = cached_path.read_bytes()
    assert list(cache_dir.glob("*.onnx")) == [minilm_rewrite.cache_path(cache_dir, MODEL_SHA256)]

    path = minilm_rewrite.cache_path(cache_dir, MODEL_SHA256)
    path.write_bytes(cached[: len(cached) // 2])  # a write cut short
    assert minilm_rewrite.cached_file(cache_dir, MODEL_SHA256) is None

    again = _load_runtime(model_path, MODEL_SHA256, compact=True)
    assert again.variant == "int8-matmul"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == hashlib.sha256(cached).hexdigest()


def test_the_cache_is_keyed_by_the_pinned_models_checksum(data_dir: Path) -> None:
    cache_dir = data_dir / "models"
    minilm_rewrite.store(cache_dir, MODEL_SHA256, b"rewritten bytes")

    cached = minilm_rewrite.cached_file(cache_dir, MODEL_SHA256)
    assert cached is not None and cached.read_bytes() == b"rewritten bytes"
    assert minilm_rewrite.cached_file(cache_dir, "0" * 64) is None


def test_with_the_setting_off_the_pinned_model_runs_and_nothing_is_written(data_dir: Path, settings: Any) -> None:
    settings.EMBEDDING_INT8_MATMUL = False

    runtime = _load_runtime(_packaged_model_path(), MODEL_SHA256, compact=False)

    assert runtime.variant == "pinned"
    assert not (data_dir / "models").exists()


def test_a_model_without_int8_weights_is_not_rewritten() -> None:
    with pytest.raises(minilm_rewrite.RewriteFailed):
        minilm_rewrite.rewrite(b"not an onnx model")


def test_make_run_knows_when_the_rewrite_is_still_to_be_built(settings: Any) -> None:
    settings.EMBEDDING_INT8_MATMUL = True
    assert int8_matmul_pending() is True

    int8_model_prepared()  # what `make run` calls before starting the web and the worker

    assert int8_matmul_pending() is False
    settings.EMBEDDER = "openai"
    assert int8_matmul_pending() is False


LOAD_IN_A_FRESH_PROCESS = """
import json, sys, django
django.setup()
from memory.embeddings.minilm import MiniLMEmbedder
embedder = MiniLMEmbedder()
embedder.embed_query("builds the int8 model if this data directory has none")
print(json.dumps({"variant": embedder.variant, "onnxImported": "onnx" in sys.modules}))
"""


def test_a_process_without_a_cached_copy_has_a_child_process_build_it(data_dir: Path) -> None:
    # Building holds onnx and both models in memory; a long-lived web or pool process must not keep that.
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", "MEMORY_DATA_DIR": str(data_dir),
        "EMBEDDING_THREADS": "1", "EMBEDDING_INT8_MATMUL": "1",
    }  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", LOAD_IN_A_FRESH_PROCESS], capture_output=True, text=True, env=env, cwd=REPO_ROOT,
        timeout=300, check=True,
    )  # fmt: skip

    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"variant": "int8-matmul", "onnxImported": False}
    assert minilm_rewrite.cached_file(data_dir / "models", MODEL_SHA256) is not None


def test_loading_the_cached_int8_model_reads_neither_model_file_whole(settings: Any) -> None:
    # Both files are ~24 MB: a copy of either held while onnxruntime builds the session was the largest part of a
    # process's peak when its model loaded (docs/benchmarks.md, Footprint). The session reads the cached file itself.
    settings.EMBEDDING_INT8_MATMUL = True
    model_path = _packaged_model_path()
    _load_runtime(model_path, MODEL_SHA256, compact=True)  # builds and caches the rewrite
    smallest = min(
        model_path.stat().st_size, minilm_rewrite.cache_path(settings.DATA_DIR / "models", MODEL_SHA256).stat().st_size
    )

    tracemalloc.start()
    try:
        runtime = _load_runtime(model_path, MODEL_SHA256, compact=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert runtime.variant == "int8-matmul"
    assert peak < smallest // 4, (peak, smallest)


def test_a_session_keeps_no_copy_of_the_model_file(settings: Any) -> None:
    # onnxruntime's Python wrapper keeps the bytes a session was built from, only to build it again on a change of
    # providers (never done here): the pinned model's 23 MB for the life of the process.
    settings.EMBEDDING_INT8_MATMUL = False
    model_path = _packaged_model_path()

    tracemalloc.start()
    try:
        runtime = _load_runtime(model_path, MODEL_SHA256, compact=True)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert runtime.variant == "pinned"
    assert held < model_path.stat().st_size // 4, held
    assert len(MiniLMEmbedder().embed_query("still runs")) == 384

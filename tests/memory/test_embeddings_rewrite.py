"""The pinned MiniLM model rewritten locally for this CPU's matrix products, int8 or float32 (memory/embeddings/
minilm_rewrite.py): its vectors must agree with the pinned model's, and the rewrite is generated data cached under the
data directory, each form under its own name."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

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


@pytest.mark.parametrize(
    ("choice", "variant", "agreement"),
    # int8 products round the activations (blocks of 16), dynamic ones too (one scale for a whole matrix: further);
    # float ones compute what the pinned model computes.
    [(True, "int8-matmul", 0.999), ("float", "float-matmul", 0.99999), ("dynamic", "dynamic-matmul", 0.95)],
)
def test_the_rewritten_model_gives_the_pinned_models_vectors(
    settings: Any, choice: Any, variant: str, agreement: float
) -> None:
    settings.EMBEDDING_INT8_MATMUL = choice
    rewritten = MiniLMEmbedder(batch_size=8)
    fast = rewritten.embed_documents(TEXTS)  # the setting is read when the model loads, on first use
    settings.EMBEDDING_INT8_MATMUL = False
    pinned = MiniLMEmbedder(batch_size=8)
    reference = pinned.embed_documents(TEXTS)

    assert (rewritten.variant, pinned.variant) == (variant, "pinned")
    assert min(cosine(a, b) for a, b in zip(fast, reference, strict=True)) >= agreement
    # A query alone (batch of one) too: the web process embeds queries one at a time.
    assert cosine(rewritten.embed_query(TEXTS[10]), pinned.embed_query(TEXTS[10])) >= agreement


# Statements and, for each, a question only it answers, mostly in other words than its statement's.
STATEMENTS = [
    "Caroline went to an LGBTQ support group on 7 May and found it powerful.",
    "Melanie painted a sunrise over the lake last weekend.",
    "Marcel will review the budget next week.",
    "I moved to Porto in March for the new job.",
    "My sister Ana lives in Lyon.",
    "Weight: 81.5 kg on 2026-11-30.",
    "The garden needs new tomato plants before spring.",
    "Ik stuur de offerte uiterlijk vrijdag naar Ilse.",
]
QUESTIONS = [
    "Which meeting for gay and trans people did Caroline attend?",
    "What picture did Melanie make recently?",
    "Who checks the spending plan soon?",
    "Which city is home now after relocating?",
    "Where does the user's sibling live?",
    "How heavy was I at the end of November?",
    "What should be planted in the vegetable patch?",
    "Wanneer gaat de offerte naar Ilse?",
]


def test_the_dynamic_forms_vectors_find_what_the_pinned_models_find(settings: Any) -> None:
    """Its vectors move further from the pinned model's than the other forms' (one rounding scale per matrix), so
    what matters is checked: each question's nearest statement is the same, among its own vectors and against a store
    of the pinned model's (it shares the model id, so a store may hold both)."""
    settings.EMBEDDING_INT8_MATMUL = "dynamic"
    dynamic = MiniLMEmbedder(batch_size=8)
    assert dynamic.variant == "dynamic-matmul"  # the setting is read when the model loads
    settings.EMBEDDING_INT8_MATMUL = "off"
    pinned = MiniLMEmbedder(batch_size=8)

    def nearest(questions: list[list[float]], statements: list[list[float]]) -> list[int]:
        return [max(range(len(statements)), key=lambda i: cosine(q, statements[i])) for q in questions]

    stored, stored_pinned = dynamic.embed_documents(STATEMENTS), pinned.embed_documents(STATEMENTS)
    asked = [dynamic.embed_query(question) for question in QUESTIONS]
    asked_pinned = [pinned.embed_query(question) for question in QUESTIONS]

    assert pinned.variant == "pinned"
    expected = nearest(asked_pinned, stored_pinned)
    assert expected == list(range(len(QUESTIONS)))  # the questions are answerable at all
    assert nearest(asked, stored) == expected
    assert nearest(asked, stored_pinned) == expected
    assert nearest(asked_pinned, stored) == expected


def test_a_texts_vector_in_the_dynamic_form_does_not_depend_on_the_texts_embedded_beside_it(settings: Any) -> None:
    """The dynamic form rounds a run's activations to one scale for all its texts, padding included, so each text
    runs alone: the same text gets the same vector in any company."""
    settings.EMBEDDING_INT8_MATMUL = "dynamic"
    embedder = MiniLMEmbedder(batch_size=8)
    company = embedder.embed_documents(TEXTS)
    alone = [embedder.embed_documents([text])[0] for text in TEXTS]

    assert embedder.variant == "dynamic-matmul"
    assert company == alone
    assert embedder.embed_query(TEXTS[10]) == alone[10]


# /proc/cpuinfo as an x86 CPU and an ARM one show it (abridged): the flags name the prepared copy (machine_key).
XEON_VNNI = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: sse4_2 avx2 avx512f avx512bw avx512_vnni\n"
ARM_DOTPROD = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes crc32 asimddp\n"


@pytest.mark.parametrize(
    ("cpuinfo", "flags"),
    [(XEON_VNNI, {"sse4_2", "avx2", "avx512f", "avx512bw", "avx512_vnni"}),
     (ARM_DOTPROD, {"fp", "asimd", "evtstrm", "aes", "crc32", "asimddp"})],
)  # fmt: skip
def test_the_cpus_flags_are_read_off_cpuinfo(tmp_path: Path, cpuinfo: str, flags: set[str]) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo)
    assert minilm_rewrite.cpu_flags(path) == flags
    assert minilm_rewrite.cpu_flags(tmp_path / "no such file") == frozenset()  # not Linux


@pytest.mark.parametrize(
    ("choice", "wanted"),
    [("auto", "dynamic"), ("int8", "int8"), ("float", "float"), ("dynamic", "dynamic"), ("off", None),
     (True, "int8"), (False, None)],
)  # fmt: skip
def test_auto_takes_the_dynamic_form_and_a_named_form_is_taken_as_named(
    settings: Any, choice: Any, wanted: str | None
) -> None:
    settings.EMBEDDING_INT8_MATMUL = choice
    assert minilm_rewrite.products_wanted() == wanted


def test_a_choice_the_setting_does_not_know_is_refused(settings: Any) -> None:
    settings.EMBEDDING_INT8_MATMUL = "fp16"
    with pytest.raises(minilm_rewrite.RewriteFailed, match="use auto, int8, float, dynamic or off"):
        minilm_rewrite.products_wanted()


@pytest.mark.parametrize(
    ("words", "value"), [("", "auto"), ("AUTO", "auto"), ("float", "float"), ("true", "int8"), ("0", "off")]
)
def test_the_setting_reads_the_environments_words(monkeypatch: pytest.MonkeyPatch, words: str, value: str) -> None:
    from config.env import env_choice

    choices = {"auto": "auto", "float": "float", "true": "int8", "0": "off"}
    monkeypatch.setenv("EMBEDDING_INT8_MATMUL", words)
    assert env_choice("EMBEDDING_INT8_MATMUL", "auto", choices) == value
    monkeypatch.setenv("EMBEDDING_INT8_MATMUL", "fast please")
    with pytest.raises(ImproperlyConfigured, match="EMBEDDING_INT8_MATMUL must be one of auto, float, int8, off"):
        env_choice("EMBEDDING_INT8_MATMUL", "auto", choices)


def settings_module_reading(words: str) -> subprocess.CompletedProcess[str]:
    """config.settings loaded in a fresh process with EMBEDDING_INT8_MATMUL set to `words`: what it prints."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "EMBEDDING_INT8_MATMUL": words}
    code = "import django; django.setup(); from django.conf import settings; print(settings.EMBEDDING_INT8_MATMUL)"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("words", "value"), [("dynamic", "dynamic"), ("Float", "float"), ("yes", "int8"), ("false", "off"), ("", "auto")]
)
def test_the_settings_module_reads_each_form_from_the_environment(words: str, value: str) -> None:
    read = settings_module_reading(words)
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == value


def test_the_settings_module_refuses_a_form_it_does_not_know() -> None:
    read = settings_module_reading("dynamik")
    assert read.returncode != 0
    assert "EMBEDDING_INT8_MATMUL must be one of auto" in read.stderr and "dynamic" in read.stderr


def test_each_form_is_cached_under_its_own_name(data_dir: Path, settings: Any) -> None:
    model_path, cache_dir = _packaged_model_path(), data_dir / "models"
    for choice in ("float", "int8", "dynamic", "float"):
        settings.EMBEDDING_INT8_MATMUL = choice
        assert _load_runtime(model_path, MODEL_SHA256).variant == f"{choice}-matmul"

    assert sorted(cache_dir.glob("*.onnx")) == sorted(
        minilm_rewrite.cache_path(cache_dir, MODEL_SHA256, products) for products in ("int8", "float", "dynamic")
    )


def test_the_rewrite_is_cached_in_the_data_directory_and_rebuilt_when_damaged(data_dir: Path, settings: Any) -> None:
    settings.EMBEDDING_INT8_MATMUL = True
    model_path = _packaged_model_path()
    cache_dir = data_dir / "models"

    first = _load_runtime(model_path, MODEL_SHA256)
    cached_path = minilm_rewrite.cached_file(cache_dir, MODEL_SHA256, "int8")
    assert first.variant == "int8-matmul"
    assert cached_path is not None
    cached = cached_path.read_bytes()
    assert list(cache_dir.glob("*.onnx")) == [minilm_rewrite.cache_path(cache_dir, MODEL_SHA256, "int8")]

    path = minilm_rewrite.cache_path(cache_dir, MODEL_SHA256, "int8")
    path.write_bytes(cached[: len(cached) // 2])  # a write cut short
    assert minilm_rewrite.cached_file(cache_dir, MODEL_SHA256, "int8") is None

    again = _load_runtime(model_path, MODEL_SHA256)
    assert again.variant == "int8-matmul"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == hashlib.sha256(cached).hexdigest()

    weights = minilm_rewrite.weights_path(path)
    packed = weights.read_bytes()
    weights.write_bytes(packed[:-4096])  # the weights cut short
    assert minilm_rewrite.cached_file(cache_dir, MODEL_SHA256, "int8") is None
    assert _load_runtime(model_path, MODEL_SHA256).variant == "int8-matmul"
    assert weights.read_bytes() == packed


def test_the_cache_is_keyed_by_the_pinned_models_checksum_and_this_machine(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = data_dir / "models"
    rewritten = minilm_rewrite.rewrite(_packaged_model_path().read_bytes(), "int8")
    graph = minilm_rewrite.store(cache_dir, MODEL_SHA256, "int8", rewritten)

    assert minilm_rewrite.cached_file(cache_dir, MODEL_SHA256, "int8") == graph
    # The weights, packed as this CPU's kernels want them, are a file of their own beside the graph.
    assert minilm_rewrite.weights_path(graph).stat().st_size > 10 * graph.stat().st_size
    assert minilm_rewrite.cached_file(cache_dir, "0" * 64, "int8") is None
    assert minilm_rewrite.cached_file(cache_dir, MODEL_SHA256, "float") is None
    monkeypatch.setattr(minilm_rewrite, "machine_key", lambda: "another0cpu0")  # the data directory, moved
    assert minilm_rewrite.cached_file(cache_dir, MODEL_SHA256, "int8") is None


def test_a_load_marks_its_copy_and_removes_copies_no_process_loaded_for_a_week(data_dir: Path, settings: Any) -> None:
    settings.EMBEDDING_INT8_MATMUL = "int8"
    model_path, cache_dir = _packaged_model_path(), data_dir / "models"
    graph = minilm_rewrite.cache_path(cache_dir, MODEL_SHA256, "int8")
    _load_runtime(model_path, MODEL_SHA256)  # builds and prepares the copy this machine wants
    week_ago = time.time() - minilm_rewrite.STALE_AFTER_S - 60

    def copy(stem: str, *, used: float) -> list[Path]:
        files = [cache_dir / f"{stem}{suffix}" for suffix in (".onnx", ".weights", ".sha256")]
        for file in files:
            file.write_bytes(b"an older copy")
            os.utime(file, (used, used))
        return files

    old_version = copy("minilm-8199be6f699a395f-nbits8-b16-v0-f9ff2781c81c", used=week_ago)
    other_machine = copy("minilm-8199be6f699a395f-nbits8-b16-v1-another0cpu0", used=time.time() - 3600)
    unfinished = cache_dir / f".{graph.stem}.abandoned"
    unfinished.mkdir()
    (unfinished / graph.name).write_bytes(b"half a build")
    os.utime(unfinished, (week_ago, week_ago))
    os.utime(graph.with_suffix(".sha256"), (week_ago, week_ago))  # this copy too was last loaded a week ago

    assert _load_runtime(model_path, MODEL_SHA256).variant == "int8-matmul"  # a process starts

    assert not any(file.exists() for file in old_version)
    assert not unfinished.exists()
    assert all(file.exists() for file in other_machine)  # another machine sharing the folder loads it
    assert graph.with_suffix(".sha256").stat().st_mtime > week_ago + 3600  # marked at this load
    assert minilm_rewrite.cached_file(cache_dir, MODEL_SHA256, "int8") == graph


def test_marking_a_copy_in_a_folder_that_cannot_be_read_does_not_raise(tmp_path: Path) -> None:
    minilm_rewrite.mark_in_use(tmp_path / "no-such-folder" / "minilm-0-f32-v1-0.onnx")  # a load must not fail on it

    assert not (tmp_path / "no-such-folder").exists()


def test_with_the_setting_off_the_pinned_model_runs_and_nothing_is_written(data_dir: Path, settings: Any) -> None:
    settings.EMBEDDING_INT8_MATMUL = False

    runtime = _load_runtime(_packaged_model_path(), MODEL_SHA256)

    assert runtime.variant == "pinned"
    assert not (data_dir / "models").exists()


def test_a_model_without_int8_weights_is_not_rewritten() -> None:
    with pytest.raises(minilm_rewrite.RewriteFailed):
        minilm_rewrite.rewrite(b"not an onnx model", "int8")
    with pytest.raises(minilm_rewrite.RewriteFailed):
        minilm_rewrite.rewrite(_packaged_model_path().read_bytes(), "float16")


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
    assert minilm_rewrite.cached_file(data_dir / "models", MODEL_SHA256, "int8") is not None


def test_loading_the_cached_int8_model_reads_neither_model_file_whole(settings: Any) -> None:
    # Both files are ~24 MB: a copy of either held while onnxruntime builds the session was the largest part of a
    # process's peak when its model loaded (docs/benchmarks.md, Footprint). The session reads the cached file itself.
    settings.EMBEDDING_INT8_MATMUL = True
    model_path = _packaged_model_path()
    _load_runtime(model_path, MODEL_SHA256)  # builds and caches the rewrite
    graph = minilm_rewrite.cache_path(settings.DATA_DIR / "models", MODEL_SHA256, "int8")
    smallest = min(model_path.stat().st_size, minilm_rewrite.weights_path(graph).stat().st_size)

    tracemalloc.start()
    try:
        runtime = _load_runtime(model_path, MODEL_SHA256)
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
        runtime = _load_runtime(model_path, MODEL_SHA256)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert runtime.variant == "pinned"
    assert held < model_path.stat().st_size // 4, held
    assert len(MiniLMEmbedder().embed_query("still runs")) == 384


HOLD_THE_MODEL = """
import sys, django
django.setup()
from memory.embeddings.minilm import MiniLMEmbedder
MiniLMEmbedder().embed_query("loaded")
print("ready", flush=True)
sys.stdin.read()
"""


def _mapped(pid: int, name: str) -> dict[str, int]:
    """Resident and proportional kB of the mappings of the file `name` in process `pid` (/proc/PID/smaps)."""
    sizes = {"Rss": 0, "Pss": 0}
    current = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            current = fields[5] if len(fields) > 5 else ""
        elif fields and fields[0].rstrip(":") in sizes and current.endswith(name):
            sizes[fields[0].rstrip(":")] += int(fields[1])
    return sizes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/smaps is Linux's")
def test_processes_share_the_prepared_weights_from_the_page_cache(data_dir: Path, settings: Any) -> None:
    # The web process and a pool process each packed their own copy of the weights on the heap (~29 MB each for the
    # float form); mapped from the prepared copy's file, the pages are the page cache's, counted half to each.
    settings.EMBEDDING_INT8_MATMUL = "float"
    _load_runtime(_packaged_model_path(), MODEL_SHA256)  # builds the prepared copy
    graph = minilm_rewrite.cached_file(data_dir / "models", MODEL_SHA256, "float")
    assert graph is not None
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", "MEMORY_DATA_DIR": str(data_dir),
        "EMBEDDING_INT8_MATMUL": "float", "EMBEDDING_THREADS": "1",
    }  # fmt: skip
    command = [sys.executable, "-c", HOLD_THE_MODEL]
    processes = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT)
        for _ in range(2)
    ]
    try:
        for process in processes:
            assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        mapped = [_mapped(process.pid, minilm_rewrite.weights_path(graph).name) for process in processes]
    finally:
        for process in processes:
            process.communicate(timeout=60)

    for sizes in mapped:
        assert sizes["Rss"] > 30_000, mapped  # the packed weights are read from the file, not copied to the heap
        assert sizes["Pss"] < 0.6 * sizes["Rss"], mapped  # and each page is counted once between the two

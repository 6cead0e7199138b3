"""The pinned MiniLM model rewritten so its matrix products run in int8: built here from the installed file, cached.

The package's model stores each weight matrix as int8 with a float scale per output column (per row for the
embedding tables), but turns every matrix back into float32 before multiplying: float matrix products are ~76 % of
its time (onnxruntime's profile). The rewrite hands the same int8 weights, unchanged, to onnxruntime's
`MatMulNBits` (8 bits, blocks of 16 along the inner dimension, accuracy level 4: each block of 16 activations is
quantised to int8 and the products run on int8, with VNNI where the CPU has it), and gathers token embeddings from
the int8 tables before scaling them instead of scaling all 30,522 rows first. The weights are exact; only the
activations are rounded, per block of 16 (blocks of 32 or more, or one scale per row, drift further than
cosine 0.999). Measured on one core: ~17 % less CPU per text in a batch of 25, ~30 % less for a query alone, and
no float32 copy of the weights in memory (docs/benchmarks.md).

The result is generated data, never shipped or committed: written under `DATA_DIR/models/`, named by the pinned
model's sha256 and this rewrite's version, with its own sha256 beside it; a missing or damaged copy is rebuilt.
The caller checks a fresh rewrite against the pinned model before using it (memory.embeddings.minilm).
`onnx` is imported only here, only while building.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

# Part of the cache file's name: change it whenever the rewrite changes, so old copies are not reused.
REWRITE_VERSION = "nbits8-b16-v1"
BLOCK_SIZE = 16
ACCURACY_LEVEL = 4  # int8 activations (0 would dequantise the weights to float again: no faster)
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


class RewriteFailed(Exception):
    """The model is not the int8 layout this rewrite knows, or onnx could not read it."""


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
print(_load_runtime(Path(sys.argv[1]), sys.argv[2], compact=True).variant)
"""


def building_here() -> bool:
    return os.environ.get(BUILD_HERE_ENV) == "1"


def build_in_child(model_path: Path, model_sha256: str, data_dir: Path) -> None:
    """Build and cache the rewrite in a short-lived child process. Failures are logged by the caller's fallback
    (it builds in-process, or runs the pinned model); nothing here raises."""
    environment = {**os.environ, BUILD_HERE_ENV: "1", "MEMORY_DATA_DIR": str(data_dir), "EMBEDDING_INT8_MATMUL": "1"}
    environment.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(model_path), model_sha256], env=environment, cwd=_PROJECT_ROOT,
            timeout=BUILD_TIMEOUT_S, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return


def cache_path(cache_dir: Path, model_sha256: str) -> Path:
    return cache_dir / f"minilm-{model_sha256[:16]}-{REWRITE_VERSION}.onnx"


def cached_file(cache_dir: Path, model_sha256: str) -> Path | None:
    """The file of the cached rewrite of the model with this checksum, if it is there and whole (its digest matches).
    Checked a block at a time; the session then reads the file itself. Files are only ever replaced whole (store),
    so the path still names a whole rewrite when the session opens it."""
    path = cache_path(cache_dir, model_sha256)
    try:
        expected = path.with_suffix(".sha256").read_text().strip()
        with path.open("rb") as file:
            actual = hashlib.file_digest(file, "sha256").hexdigest()
    except OSError:
        return None
    return path if actual == expected else None


def store(cache_dir: Path, model_sha256: str, data: bytes) -> None:
    """Write the rewrite and its digest, each atomically: a reader sees old or new files, never half of one, and
    a digest that does not match (another process between the two writes) only means one more rebuild."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_path(cache_dir, model_sha256)
    _write_atomically(path, data)
    _write_atomically(path.with_suffix(".sha256"), hashlib.sha256(data).hexdigest().encode())


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def rewrite(model_bytes: bytes) -> bytes:
    """The serialised rewritten model. Raises RewriteFailed if there is nothing to rewrite."""
    try:
        import onnx
    except ImportError as exc:
        raise RewriteFailed(f"onnx is not installed ({exc.name})") from exc
    try:
        model = onnx.load_from_string(model_bytes)
    except Exception as exc:  # onnx raises DecodeError and friends without a common base
        raise RewriteFailed(f"onnx cannot read the model: {exc}") from exc
    graph = model.graph
    rewriter = _Rewriter(graph)
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

    def __init__(self, graph: Any) -> None:
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}
        self.producers = {output: node for node in graph.node for output in node.output}
        self.readers = Counter(name for node in graph.node for name in node.input)
        self.dropped: set[int] = set()
        self.added: list[Any] = []
        self.rewritten = 0

    def replacement(self, node: Any) -> list[Any]:
        if node.op_type == "MatMul" and (weight := self._int8_weight(node.input[1])) is not None:
            nodes = self._matmul(node, *weight)
        elif node.op_type == "Gather" and _axis(node) == 0 and (weight := self._int8_weight(node.input[0])):
            nodes = self._gather(node, *weight)
        else:
            return [node]
        self.rewritten += 1
        return nodes

    def _int8_weight(self, name: str) -> tuple[Any, Any] | None:
        """(int8 values, scales) of a weight dequantised in the graph and read by one node only."""
        import numpy as np
        from onnx import numpy_helper

        scale_node = self.producers.get(name)
        if scale_node is None or scale_node.op_type != "Mul" or self.readers[name] != 1:
            return None
        cast = self.producers.get(scale_node.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in self.initializers:
            return None
        if self.readers[cast.output[0]] != 1:
            return None
        if scale_node.input[1] not in self.initializers:
            return None
        values = numpy_helper.to_array(self.initializers[cast.input[0]])
        scales = numpy_helper.to_array(self.initializers[scale_node.input[1]])
        if values.dtype != np.int8 or values.ndim != 2 or scales.dtype != np.float32:
            return None
        self.dropped |= {id(scale_node), id(cast)}
        return values, scales

    def _matmul(self, node: Any, values: Any, scales: Any) -> list[Any]:
        import numpy as np
        from onnx import helper, numpy_helper

        inner, outer = values.shape
        if scales.size != outer or inner % BLOCK_SIZE:
            raise RewriteFailed(f"{node.name}: scales of shape {scales.shape} for weights {values.shape}")
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

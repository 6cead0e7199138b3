"""The dynamic form's layers fused into onnxruntime's own kernels (minilm_rewrite, "dynamic" products).

The pinned model, as exported, computes each layer's attention in ~20 small nodes (three products and their biases,
reshapes and transposes per head, the scaled scores, the additive mask, softmax, a NaN guard, the weighted sum) and
its GELU in five (divide, erf, add, multiply twice); onnxruntime's own optimiser fuses none of them here. On a chat
turn run alone (~34 tokens) those small nodes cost about as much as a third of the products. Fused:

- attention: the three projections of one input become one `QAttention` (com.microsoft) on the three int8 weights
  side by side with their column scales, after one `DynamicQuantizeLinear` of the input: the same uint8 activations
  as the three `DynamicQuantizeMatMul`s computed (one scale for the whole input each time), quantised once instead of
  three times, then onnxruntime's attention kernel with the model's padding mask;
- a bias `Add` after a product goes into that `DynamicQuantizeMatMul`'s own bias input;
- the erf GELU becomes `Gelu` (com.microsoft), the same formula in one kernel.

Each fusion checks the pattern it replaces (the constants included: the scores' scale, GELU's √2, 1 and ½) and leaves a
layer as it is otherwise; the caller checks the whole rewrite against the pinned model (REWRITE_MIN_COSINE). One chat
turn: 7.3 -> 6.5 ms of CPU on one thread. The vectors move within cosine 0.994 of the unfused form's (a LoCoMo
conversation's turns; the activations round a little differently) and stay as close to the pinned model's as before
(0.971 at worst, 0.992 on average; docs/benchmarks.md, issue 18, twelfth pass).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

MATMUL = "DynamicQuantizeMatMul"
MASK_INPUT = "attention_mask"
_MASK_INT32 = "attention_mask_int32"


def fuse(graph: Any) -> int:
    """Fuses the graph's attention blocks, product biases and GELUs in place (after the "dynamic" rewrite); drops the
    nodes nothing reads any more. Returns the number of fusions made."""
    # The work is done on a list of the nodes, written back once: the graph's own repeated field copies what it is
    # given, so a node put back in it is no longer the object the fusions hold.
    work = _Work(graph)
    fused = _fuse_attention(work) + _fold_biases(work) + _fuse_gelus(work)
    work.drop_unread()
    del graph.node[:]
    graph.node.extend(work.nodes)
    return fused


class _Work:
    """The graph's nodes as a list in the graph's order, and the graph itself (inputs, outputs, initializers)."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.nodes = list(graph.node)

    def replace(self, replaced: list[Any], nodes: list[Any], *, at: Any) -> None:
        """`replaced` taken out and `nodes` put where `at` (one of them) was: the order stays a valid one as long as
        `at` comes after everything `nodes` read."""
        gone = {id(node) for node in replaced}
        kept: list[Any] = []
        for node in self.nodes:
            if node is at:
                kept.extend(nodes)
            if id(node) not in gone:
                kept.append(node)
        self.nodes = kept

    def index(self) -> GraphIndex:
        return GraphIndex(self.nodes, self.graph)

    def drop_unread(self) -> None:
        """Removes the nodes none of whose outputs is read (shape computations the fused nodes no longer need)."""
        outputs = {output.name for output in self.graph.output}
        while True:
            read = {name for node in self.nodes for name in node.input} | outputs
            kept = [node for node in self.nodes if any(output in read for output in node.output)]
            if len(kept) == len(self.nodes):
                return
            self.nodes = kept


class GraphIndex:
    """Nodes by output and by input, and the graph's initializers and outputs, as they are now (the rewrite's
    products and these fusions read a graph through it)."""

    def __init__(self, nodes: list[Any], graph: Any) -> None:
        self.producers = {output: node for node in nodes for output in node.output}
        self.readers: dict[str, list[Any]] = defaultdict(list)
        for node in nodes:
            for name in node.input:
                self.readers[name].append(node)
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}
        self.outputs = {output.name for output in graph.output}

    def only_reader(self, name: str) -> Any | None:
        readers = self.readers[name]
        return readers[0] if len(readers) == 1 and name not in self.outputs else None

    def constant(self, name: str) -> Any:
        """The value of this initializer (a numpy array), None if it is not one."""
        from onnx import numpy_helper

        tensor = self.initializers.get(name)
        return None if tensor is None else numpy_helper.to_array(tensor)

    def bias_add(self, product: Any) -> Any | None:
        """The `Add` of a one-dimensional constant that alone reads this product's output, if there is one."""
        add = self.only_reader(product.output[0])
        if add is None or add.op_type != "Add" or add.input[0] != product.output[0]:
            return None
        bias = self.constant(add.input[1])
        return add if bias is not None and bias.ndim == 1 else None


# Attention ------------------------------------------------------------------------------------------------------


def _fuse_attention(work: _Work) -> int:
    if MASK_INPUT not in {tensor.name for tensor in work.graph.input}:
        return 0
    fused = 0
    while True:
        index = work.index()  # of the graph as the last fusion left it
        block = _next_attention(work, index)
        if block is None:
            return fused
        _fuse_block(work, index, *block)
        fused += 1


def _next_attention(work: _Work, index: GraphIndex) -> tuple[list[Any], list[Any], set[int], str, int] | None:
    """The first attention block not fused yet: its projections (query, key, value), their bias adds, the ids of
    the nodes between them and the next product, the tensor those nodes hand on, and the head size."""
    by_input: dict[str, list[Any]] = defaultdict(list)
    for node in work.nodes:
        if node.op_type == MATMUL:
            by_input[node.input[0]].append(node)
    for products in by_input.values():
        adds = [add for product in products if (add := index.bias_add(product)) is not None]
        if len(products) != 3 or len(adds) != 3:
            continue
        region, end = _region(work, index, [add.output[0] for add in adds])
        if end is None:
            continue
        shape = _attention_shape(index, region, adds)
        if shape is None:
            continue
        order, head_size = shape
        return [products[i] for i in order], [adds[i] for i in order], {id(node) for node in region}, end, head_size
    return None


def _region(work: _Work, index: GraphIndex, starts: list[str]) -> tuple[list[Any], str | None]:
    """The nodes that read, directly or not, any of `starts`, up to (not including) the products that follow, in the
    graph's order, and the one tensor they hand to those products (None if they hand on more than one, or reach the
    graph's output)."""
    seen: set[int] = set()
    ends: set[str] = set()
    pending = list(starts)
    while pending:
        name = pending.pop()
        if name in index.outputs:
            return [], None
        for reader in index.readers[name]:
            if reader.op_type == MATMUL:
                ends.add(name)
            elif id(reader) not in seen:
                seen.add(id(reader))
                pending.extend(reader.output)
    region = [node for node in work.nodes if id(node) in seen]
    return region, (ends.pop() if len(ends) == 1 and ends.isdisjoint(starts) else None)


def _attention_shape(index: GraphIndex, region: list[Any], adds: list[Any]) -> tuple[list[int], int] | None:
    """Which of the three adds is the query, the key and the value (as positions), and the head size, when the
    region is scaled dot-product attention as the model exports it: scores = (query x scale) @ (key x scale)^T, plus
    the additive mask, softmax, then @ value; the two scales' product 1/sqrt(head size)."""
    starts = {add.output[0]: position for position, add in enumerate(adds)}
    products = [node for node in region if node.op_type == "MatMul"]
    softmax = [node for node in region if node.op_type == "Softmax"]
    if len(products) != 2 or len(softmax) != 1:
        return None
    scores, weighted = products
    query, key = (_origins(index, scores.input[side], starts) for side in (0, 1))
    value = _origins(index, weighted.input[1], starts)
    if len(query) != 1 or len(key) != 1 or len(value) != 1 or len(query | key | value) != 3:
        return None
    head_size = _head_size(index, region)
    scales = [_scalar(index, node) for node in region if node.op_type == "Mul"]
    if head_size is None or len(scales) != 2 or scales[0] is None or scales[1] is None:
        return None
    if not math.isclose(scales[0] * scales[1], 1 / math.sqrt(head_size), rel_tol=1e-5):
        return None
    return [query.pop(), key.pop(), value.pop()], head_size


def _origins(index: GraphIndex, name: str, starts: dict[str, int]) -> set[int]:
    """Which of `starts` (tensor -> position) the tensor `name` is computed from, following data inputs back."""
    found: set[int] = set()
    pending, seen = [name], set()
    while pending:
        current = pending.pop()
        if current in starts:
            found.add(starts[current])
            continue
        producer = index.producers.get(current)
        if producer is None or id(producer) in seen or producer.op_type in ("Shape", MATMUL):
            continue
        seen.add(id(producer))
        pending.extend(producer.input[:1] if producer.op_type == "Reshape" else producer.input)
    return found


def _head_size(index: GraphIndex, region: list[Any]) -> int | None:
    """The last dimension of the reshapes that split the projections into heads: the positive one-element constant
    their shapes end with (a reshape back to one row per token ends with -1), the same for all of them."""
    sizes = set()
    for node in region:
        if node.op_type != "Reshape" or (shape := index.producers.get(node.input[1])) is None:
            continue
        if shape.op_type == "Concat" and (last := index.constant(shape.input[-1])) is not None and last.size == 1:
            sizes.add(int(last.reshape(-1)[0]))
    sizes.discard(-1)
    return sizes.pop() if len(sizes) == 1 and min(sizes) > 0 else None


def _scalar(index: GraphIndex, node: Any) -> float | None:
    values = [value for name in node.input if (value := index.constant(name)) is not None and value.size == 1]
    return float(values[0].reshape(-1)[0]) if len(values) == 1 else None


def _fuse_block(
    work: _Work, index: GraphIndex, products: list[Any], adds: list[Any], region: set[int], end: str, head_size: int
) -> None:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weights = np.concatenate([index.constant(product.input[1]) for product in products], axis=1)
    scales = np.concatenate([index.constant(product.input[2]).reshape(-1) for product in products])
    biases = np.concatenate([index.constant(add.input[1]) for add in adds])
    hidden = weights.shape[1] // 3
    base = f"{products[0].name}_attention"
    work.graph.initializer.extend(
        [
            numpy_helper.from_array(weights, f"{base}_weights"),
            numpy_helper.from_array(scales.astype(np.float32), f"{base}_scales"),
            numpy_helper.from_array(biases.astype(np.float32), f"{base}_bias"),
        ]
    )
    if _MASK_INT32 not in index.producers:
        cast = helper.make_node("Cast", [MASK_INPUT], [_MASK_INT32], name=_MASK_INT32, to=TensorProto.INT32)
        work.nodes.insert(0, cast)
    source = products[0].input[0]
    values, scale, zero_point = f"{base}_input", f"{base}_input_scale", f"{base}_input_zero_point"
    inputs = [values, f"{base}_weights", f"{base}_bias", scale, f"{base}_scales", _MASK_INT32, zero_point]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", [source], [values, scale, zero_point], name=f"{base}_quantise"),
        helper.make_node("QAttention", inputs, [end], name=base, domain="com.microsoft", num_heads=hidden // head_size),
    ]
    replaced = [node for node in work.nodes if id(node) in region] + products + adds
    work.replace(replaced, nodes, at=products[0])


# Biases and GELU ------------------------------------------------------------------------------------------------


def _fold_biases(work: _Work) -> int:
    from onnx import helper

    index = work.index()
    folded = 0
    for product in [node for node in work.nodes if node.op_type == MATMUL and len(node.input) == 3]:
        add = index.bias_add(product)
        if add is None:
            continue
        inputs = [*product.input, "", add.input[1]]  # no zero point for the int8 weights: they are symmetric
        with_bias = helper.make_node(MATMUL, inputs, list(add.output), name=product.name, domain="com.microsoft")
        work.replace([product, add], [with_bias], at=product)
        folded += 1
    return folded


def _fuse_gelus(work: _Work) -> int:
    """x * 0.5 * (1 + erf(x / sqrt(2))), as Div, Erf, Add, Mul, Mul, becomes Gelu(x)."""
    from onnx import helper

    index = work.index()
    fused = 0
    for divide in [node for node in work.nodes if node.op_type == "Div"]:
        nodes = _gelu_nodes(index, divide)
        if nodes is None:
            continue
        gelu = helper.make_node("Gelu", [divide.input[0]], list(nodes[-1].output), name=f"{divide.name}_gelu",
                                domain="com.microsoft")  # fmt: skip
        work.replace(nodes, [gelu], at=nodes[-1])
        fused += 1
    return fused


def _gelu_nodes(index: GraphIndex, divide: Any) -> list[Any] | None:
    """The five nodes of one erf GELU starting at this Div, if that is what follows it."""
    x = divide.input[0]
    erf = index.only_reader(divide.output[0])
    plus = index.only_reader(erf.output[0]) if erf is not None and erf.op_type == "Erf" else None
    half = index.only_reader(plus.output[0]) if plus is not None and plus.op_type == "Add" else None
    times = index.only_reader(half.output[0]) if half is not None and half.op_type == "Mul" else None
    if times is None or times.op_type != "Mul" or x not in times.input:
        return None
    expected = ((divide, math.sqrt(2)), (plus, 1.0), (half, 0.5))
    if any(not math.isclose(_scalar(index, node) or 0.0, value, rel_tol=1e-6) for node, value in expected):
        return None
    return [divide, erf, plus, half, times]

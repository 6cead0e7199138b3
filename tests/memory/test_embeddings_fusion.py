"""The dynamic form's fused layers (memory.embeddings.minilm_fusion) on the real pinned model: what is fused, that the
fused graph computes what the unfused one does (padding included), and that a pattern it does not know is left."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from memory.embeddings import minilm_fusion, minilm_rewrite
from memory.embeddings.minilm import MAX_TOKENS, TOKENIZER_PATH, _embed_batch, _packaged_model_path, _runtime
from memory.embeddings.minilm_files import loaded_tokenizer

TEXTS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "I'll send the spec to Marcel by Friday.",
    "Ik stuur de offerte uiterlijk vrijdag naar Ilse.",
    "Person: Marcel",
    "when do I plan the garden?",
    "x",
    "🙂 ok",
    "the quarterly planning review of the garden project " * 60,
]
LAYERS = 6  # all-MiniLM-L6-v2


@pytest.fixture(scope="module")
def graphs() -> dict[str, bytes]:
    """The pinned model's dynamic rewrite, fused (as built) and unfused (the products rewritten only)."""
    pinned = _packaged_model_path().read_bytes()
    fused = minilm_rewrite.rewrite(pinned, "dynamic")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(minilm_fusion, "fuse", lambda graph: 0)
        unfused = minilm_rewrite.rewrite(pinned, "dynamic")
    return {"fused": fused, "unfused": unfused}


def vectors(model: bytes, texts: list[str], *, together: bool = False) -> np.ndarray:
    """Each text's vector, every text run alone (as the dynamic form runs them), or all in one padded batch."""
    tokenizer = loaded_tokenizer(TOKENIZER_PATH, max_tokens=MAX_TOKENS)
    runtime = _runtime(model, tokenizer, variant="dynamic-matmul", origin=Path("test.onnx"))
    encodings = tokenizer.encode_batch(texts)
    if together:
        return np.array(_embed_batch(runtime, encodings))
    return np.array([_embed_batch(runtime, [encoding])[0] for encoding in encodings])


def operators(model: bytes) -> Counter[str]:
    return Counter(node.op_type for node in onnx.load_from_string(model).graph.node)


def test_every_layers_attention_and_gelu_are_fused_and_biases_go_into_the_products(graphs: dict[str, bytes]) -> None:
    fused, unfused = operators(graphs["fused"]), operators(graphs["unfused"])
    assert unfused["DynamicQuantizeMatMul"] == 6 * LAYERS and unfused["Erf"] == LAYERS and unfused["Softmax"] == LAYERS
    assert fused["QAttention"] == LAYERS and fused["DynamicQuantizeLinear"] == LAYERS
    assert fused["Gelu"] == LAYERS
    # Left per layer: the attention's output product and the two feed-forward ones, each with its bias inside.
    assert fused["DynamicQuantizeMatMul"] == 3 * LAYERS
    products = [node for node in onnx.load_from_string(graphs["fused"]).graph.node if node.op_type.endswith("MatMul")]
    assert all(len(node.input) == 5 and node.input[4] for node in products)
    for gone in ("Erf", "Softmax", "Where", "IsNaN", "Transpose", "MatMul", "Div"):
        assert fused[gone] == 0, gone
    assert sum(fused.values()) < sum(unfused.values()) / 3


def test_the_fused_graph_computes_what_the_unfused_one_does(graphs: dict[str, bytes]) -> None:
    fused, unfused = vectors(graphs["fused"], TEXTS), vectors(graphs["unfused"], TEXTS)
    agreement = (fused * unfused).sum(axis=1)
    assert agreement.min() > 0.99, agreement


def test_padding_stays_masked_in_the_fused_attention(graphs: dict[str, bytes]) -> None:
    """Texts of 3 to 256 tokens in one batch: the short ones are mostly padding. With the mask lost they attend to it
    and move far (cosine 0.26-0.40 to the unfused graph's; checked). The padded rows take part in each product's one
    activation scale, and the two graphs leave different values in them, so the short texts move a little (~0.99)."""
    fused, unfused = vectors(graphs["fused"], TEXTS, together=True), vectors(graphs["unfused"], TEXTS, together=True)
    agreement = (fused * unfused).sum(axis=1)
    assert agreement.min() > 0.97, agreement


def _altered(model: bytes, change: Any) -> bytes:
    loaded = onnx.load_from_string(model)
    change(loaded.graph)
    return bytes(loaded.SerializeToString())


def _scaled_constant(graph: Any, consumer: str, factor: float) -> None:
    """Multiplies the scalar constant read by the first node of this kind that reads one (a copy of its own)."""
    initializers = {tensor.name: tensor for tensor in graph.initializer}

    def scalar(name: str) -> bool:
        return name in initializers and numpy_helper.to_array(initializers[name]).size == 1

    node = next(node for node in graph.node if node.op_type == consumer and any(map(scalar, node.input)))
    position = next(index for index, name in enumerate(node.input) if scalar(name))
    value = numpy_helper.to_array(initializers[node.input[position]]) * np.float32(factor)
    graph.initializer.append(numpy_helper.from_array(value, f"{node.name}_altered"))
    node.input[position] = f"{node.name}_altered"


@pytest.mark.parametrize(
    ("consumer", "left"),
    # A GELU whose divisor is not √2; attention whose scores are not scaled by 1/√(head size).
    [("Div", "Gelu"), ("Mul", "QAttention")],
)
def test_a_pattern_with_other_constants_is_left_as_it_is(
    graphs: dict[str, bytes], monkeypatch: pytest.MonkeyPatch, consumer: str, left: str
) -> None:
    unfused = _altered(graphs["unfused"], lambda graph: _scaled_constant(graph, consumer, 1.5))
    model = onnx.load_from_string(unfused)
    assert minilm_fusion.fuse(model.graph) > 0
    fused = bytes(model.SerializeToString())
    assert operators(fused)[left] == LAYERS - 1
    # The altered layer still computes what it says: the fused graph agrees with the altered unfused one.
    agreement = (vectors(fused, TEXTS) * vectors(unfused, TEXTS)).sum(axis=1)
    assert agreement.min() > 0.99, agreement


def test_a_graph_without_an_attention_mask_input_keeps_its_attention(graphs: dict[str, bytes]) -> None:
    def renamed(graph: Any) -> None:
        mask = next(tensor for tensor in graph.input if tensor.name == minilm_fusion.MASK_INPUT)
        mask.name = "mask"
        for node in graph.node:
            node.input[:] = ["mask" if name == minilm_fusion.MASK_INPUT else name for name in node.input]

    model = onnx.load_from_string(_altered(graphs["unfused"], renamed))
    minilm_fusion.fuse(model.graph)
    counts = Counter(node.op_type for node in model.graph.node)
    assert counts["QAttention"] == 0 and counts["Softmax"] == LAYERS
    assert counts["Gelu"] == LAYERS  # the rest is fused all the same

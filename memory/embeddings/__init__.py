"""Text embeddings for semantic search (SPEC §8a).

One `Embedder` per process, chosen by `settings.EMBEDDER`: `minilm` (local int8 all-MiniLM-L6-v2, offline) or
`openai` (any OpenAI-compatible `/embeddings` endpoint). Every failure surfaces as `EmbedderUnavailable`, so a
caller can keep the write and fall back to keyword search instead of failing the request.

Importing this package stays cheap: onnxruntime, tokenizers and numpy load inside the backends on first use,
never when the web app imports it (tests/test_lazy_imports.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from django.conf import settings


class EmbedderUnavailable(Exception):
    """The embedder cannot produce vectors right now (model missing or corrupt, endpoint down, bad answer)."""


class Embedder(Protocol):
    """Turns text into L2-normalised vectors; each stored vector row records `model_id`."""

    @property
    def model_id(self) -> str:
        """A stable name for the vector space: vectors with different ids must never be compared."""
        ...

    @property
    def dimensions(self) -> int:
        """Length of every vector, or 0 while a remote model's size is not known yet."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; an empty input gives an empty list."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The vector of one search query."""
        ...

    def query_run(self, text: str) -> Callable[[], list[float]]:
        """The vector of one search query in two steps: this call does what needs the interpreter (the local model's
        tokens and inputs), on the caller's thread; the call it returns does the rest (onnxruntime's run, which lets
        the interpreter go; a remote call), to be made on another. The second raises EmbedderUnavailable as
        embed_query does."""
        ...


_lock = threading.Lock()
_embedder: Embedder | None = None


def get_embedder() -> Embedder:
    """The process-wide embedder built from settings; raises `EmbedderUnavailable` for an unknown backend.

    Building is cheap: the backends load their models or open connections on first use.
    """
    global _embedder
    with _lock:
        if _embedder is None:
            _embedder = _build_from_settings()
        return _embedder


def embedder_preload() -> None:
    """Loads this process's local model now, in a thread of its own (a Celery pool process at start: its first job
    then does not wait for the model, and its idle size is the size it works at). Remote embedders load nothing."""
    if settings.EMBEDDER != "minilm":
        return

    def preload() -> None:
        embedder = get_embedder()
        if hasattr(embedder, "preload"):
            embedder.preload()

    threading.Thread(target=preload, name="embedder-preload", daemon=True).start()


def reset_embedder_cache() -> None:
    """Forget the process-wide embedder, so the next `get_embedder()` reads settings again (tests)."""
    global _embedder
    with _lock:
        _embedder = None


def _build_from_settings() -> Embedder:
    backend = settings.EMBEDDER
    if backend == "minilm":
        from memory.embeddings.minilm import MiniLMEmbedder

        return MiniLMEmbedder(batch_size=settings.EMBEDDING_BATCH_SIZE)
    if backend == "openai":
        from memory.embeddings.openai_compat import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(
            url=settings.EMBEDDING_URL,
            model=settings.EMBEDDING_MODEL,
            api_key=settings.EMBEDDING_API_KEY,
            timeout_s=settings.EMBEDDING_TIMEOUT_S,
            dimensions=settings.EMBEDDING_DIMENSIONS,
            batch_size=settings.EMBEDDING_BATCH_SIZE,
        )
    raise EmbedderUnavailable(f"Unknown EMBEDDER {backend!r}: use 'minilm' or 'openai'.")


__all__ = ["Embedder", "EmbedderUnavailable", "embedder_preload", "get_embedder", "reset_embedder_cache"]

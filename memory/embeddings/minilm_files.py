"""The files the local MiniLM model is made of, checked as they are read: the model (its sha256) and the vendored
tokenizer. Failures are EmbedderUnavailable with what to do about them (memory.embeddings.minilm)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from memory.embeddings import EmbedderUnavailable

if TYPE_CHECKING:
    from tokenizers import Tokenizer


def checked_bytes(model_path: Path, expected_sha256: str, *, reinstall: str) -> bytes:
    """The file's bytes, hashed as read: the caller loads the very bytes that were checked."""
    try:
        model_bytes = model_path.read_bytes()
    except OSError as exc:
        raise _unreadable(model_path, exc, reinstall) from exc
    _check_digest(model_path, hashlib.sha256(model_bytes).hexdigest(), expected_sha256, reinstall)
    return model_bytes


def check_file(model_path: Path, expected_sha256: str, *, reinstall: str) -> None:
    """Checks the file a block at a time, holding none of it."""
    try:
        with model_path.open("rb") as file:
            actual_sha256 = hashlib.file_digest(file, "sha256").hexdigest()
    except OSError as exc:
        raise _unreadable(model_path, exc, reinstall) from exc
    _check_digest(model_path, actual_sha256, expected_sha256, reinstall)


def _unreadable(model_path: Path, exc: OSError, reinstall: str) -> EmbedderUnavailable:
    return EmbedderUnavailable(
        f"Cannot read the embedding model {model_path}: {exc.strerror or exc}. Reinstall {reinstall}."
    )


def _check_digest(model_path: Path, actual_sha256: str, expected_sha256: str, reinstall: str) -> None:
    if actual_sha256 != expected_sha256:
        raise EmbedderUnavailable(
            f"The embedding model {model_path} has sha256 {actual_sha256}, expected {expected_sha256}: "
            f"the file is corrupt or not the pinned one. Reinstall {reinstall}."
        )


def loaded_tokenizer(path: Path, *, max_tokens: int) -> Tokenizer:
    """The tokenizer, truncating at `max_tokens` and padding nothing."""
    try:
        import onnxruntime  # noqa: F401 (imported here to report a missing runtime early; used by the session)
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbedderUnavailable(f"The embedding runtime is not installed ({exc.name}).") from exc

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for unreadable or invalid files
        raise EmbedderUnavailable(f"Cannot load the tokenizer {path}: {exc}") from exc
    tokenizer.enable_truncation(max_length=max_tokens)
    if tokenizer.token_to_id("[PAD]") is None:
        raise EmbedderUnavailable(f"The tokenizer {path} has no [PAD] token.")
    # No padding here (the file asks for a fixed 128): each batch is padded to its own longest text (_embed_batch).
    tokenizer.no_padding()
    return tokenizer

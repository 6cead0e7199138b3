"""Generated store vectors (bench/store_vectors.py): unit length, each close to a real vector, reproducible."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.store_vectors import NOISE_COSINE, generated_vectors, vectors_for
from memory.embeddings import get_embedder


def real_vectors() -> np.ndarray:
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(50, 384)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_generated_vectors_are_unit_length_and_sit_near_a_real_vector() -> None:
    real = real_vectors()

    made = generated_vectors(real, 1000, seed=7)

    assert made.shape == (1000, 384)
    assert np.allclose(np.linalg.norm(made, axis=1), 1.0, atol=1e-5)
    nearest = (made @ real.T).max(axis=1)
    assert abs(float(nearest.mean()) - NOISE_COSINE) < 0.02
    assert float(nearest.min()) > NOISE_COSINE - 0.1


def test_generated_vectors_are_reproducible_and_not_copies() -> None:
    real = real_vectors()

    first, again = generated_vectors(real, 200, seed=3), generated_vectors(real, 200, seed=3)

    assert np.array_equal(first, again)
    assert not np.array_equal(first, generated_vectors(real, 200, seed=4))
    assert float((first @ real.T).max()) < 0.99  # noise added: no vector repeats a real one


def test_a_store_gets_real_vectors_for_its_first_statements_and_generated_ones_past_them(tmp_path: Path) -> None:
    texts = ["Priya moved to Porto last week.", "Tom is allergic to peanuts.", "Remind me to pay rent tonight."]
    texts += [f"Project Falcon ships in Q{quarter} if QA signs off." for quarter in (1, 2, 3)]
    real = np.asarray(get_embedder().embed_documents(texts[:2]), dtype=np.float32)

    made = vectors_for(texts, tmp_path, real=2, seed=5)

    assert made.shape == (6, 384)
    assert np.allclose(made[:2], real, atol=1e-5)  # embedded, in order
    nearest = made[2:] @ real.T
    assert np.all(nearest.max(axis=1) > NOISE_COSINE - 0.1)  # each generated one sits near a real one
    assert np.all(nearest.max(axis=1) < 0.99)
    assert np.array_equal(vectors_for(texts, tmp_path, real=2, seed=5), made)  # the cache: the same vectors again
    assert np.load(tmp_path / "vectors.npy").shape == (2, 384)  # only the embedded ones are cached

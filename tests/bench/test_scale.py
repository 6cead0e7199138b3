"""bench/scale.py's generated vectors: unit length, each close to a real vector, the same for the same seed."""

from __future__ import annotations

import numpy as np

from bench.scale import NOISE_COSINE, generated_vectors


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

"""bench/search_latency.py's rule for measuring a kept store again (--reuse) instead of building it."""

from __future__ import annotations

import json
from pathlib import Path

from bench.search_latency import reused_real


def kept_store(tmp_path: Path, real: int) -> Path:
    kept = tmp_path / "store.json"
    kept.write_text(json.dumps({"size": 100_000, "real": real}))
    return kept


def test_a_store_with_at_least_the_embedded_vectors_asked_for_is_measured_as_it_is(tmp_path: Path) -> None:
    kept = kept_store(tmp_path, real=10_000)

    assert reused_real(kept, claims=100_000, size=100_000, real=10_000) == 10_000
    assert reused_real(kept, claims=100_000, size=100_000, real=5_000) == 10_000  # reported as what it holds


def test_a_store_with_fewer_embedded_vectors_or_claims_than_asked_is_built_again(tmp_path: Path) -> None:
    kept = kept_store(tmp_path, real=10_000)

    assert reused_real(kept, claims=100_000, size=100_000, real=100_000) is None
    assert reused_real(kept, claims=99_999, size=100_000, real=10_000) is None


def test_a_store_of_an_older_run_without_its_record_holds_only_embedded_vectors(tmp_path: Path) -> None:
    missing = tmp_path / "store.json"

    assert reused_real(missing, claims=100_000, size=100_000, real=100_000) == 100_000

"""bench/search_latency.py's rule for measuring a kept store again (--reuse) instead of building it, and its measure of
the word counts Redis holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.cache import cache

from bench.search_latency import reused_real, word_statistics_held
from memory.access import access_for_user
from memory.models import User
from memory.recall import word_statistics
from memory.recall.search import SearchRequest, search
from memory.recall.threads import drained
from tests.factories import ClaimFactory


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


def test_the_word_counts_held_are_measured_in_redis_against_the_words_asked(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)  # a large reach: counts marked fresh
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    asked = ["Which cello lessons?", "Who learns the cello?"]
    for query in asked:
        search(access_for_user(user=alice), SearchRequest(query=query, use_vector=False))
    drained("vocabulary")
    held = word_statistics_held(asked)
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    cached = redis.keys(cache.make_key("recall:df:*"))
    marks = redis.keys(cache.make_key("recall:df:fresh:*"))
    assert held["keys"] == len(cached) and held["marks"] == len(marks) == len({"", "cello", "lessons", "learns"})
    assert held["bytes"] == sum(redis.memory_usage(key) for key in cached)
    assert held["mark_bytes"] == sum(redis.memory_usage(key) for key in marks) > 0
    assert held["words"] == len({"cello", "lessons", "learns"})

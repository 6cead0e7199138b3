"""Word statistics of the keyword leg: a small reach's whole vocabulary counted at once, as each word would be."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory.access import access_for_user
from memory.models import Claim, User
from memory.recall import held_words, threads, word_statistics
from memory.recall.corpora import CORPORA
from memory.recall.search import SearchRequest, search
from memory.recall.threads import drained, process_pool
from memory.recall.word_statistics import statistics_counted, vocabulary_counted, vocabulary_counted_soon
from memory.services.audit import memory_changed
from tests.conftest import Api, Persona
from tests.factories import ClaimFactory, NodeFactory
from tests.memory.test_recall_api import say

pytestmark = pytest.mark.django_db


def reach_of(user: User) -> dict[str, Any]:
    access = access_for_user(user=user)
    partitions = [partition.pk for partition in access.read_partitions]
    return {"owner": user.pk, "partitions": partitions, "scope": "personal", "excluded": []}


def held_in_reach(api: Api, owner: Persona, alice: User) -> None:
    said = [
        "I painted the garage door on Sunday.",
        "Painting walls is slower than painting doors.",
        "Mail the painter at paint.crew@example.test about the re-painted shed.",
        "The 4.12 release ships today.",
    ]
    say(api, owner, *said)
    ClaimFactory.create(owner=alice, statement="The user paints watercolours of the harbour.")
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    NodeFactory.create(owner=alice, type="Project", label="Harbour painting")


def cached_counts(user: User, *, every: bool = False) -> dict[str, int]:
    """Every word count cached for `user`'s reaches, by key, with its time to live in seconds (`every`: with the
    reaches' vocabulary guards, sizes and vocabularies' memory versions, and the owner's rows)."""
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    pattern = cache.make_key(f"recall:df:*:{user.pk}:*")
    return {
        key.decode(): redis.ttl(key)
        for key in redis.scan_iter(match=pattern, count=1000)
        if every or not any(kind in key for kind in (b"df:vocabulary:", b"df:size:", b"df:counted:", b"df:owned:"))
    }


def ten_minutes_later(user: User) -> None:
    """As STATS_SECONDS later: every count and mark of `user`'s kept at most that long gone."""
    expired = [key for key, ttl in cached_counts(user, every=True).items() if 0 <= ttl <= word_statistics.STATS_SECONDS]
    cache._cache.get_client(write=True).delete(*expired)  # type: ignore[attr-defined]


def vocabulary_after_a_search(api: Api, owner: Persona, alice: User) -> None:
    """alice's reach, searched once with a new word, and the count it handed to the thread done."""
    held_in_reach(api, owner, alice)
    search(access_for_user(user=alice), SearchRequest(query="Which watercolours?", use_vector=False))
    drained("vocabulary")


def test_a_reachs_vocabulary_is_counted_as_each_of_its_words_would_be(
    api: Api, owner: Persona, alice: User, bob: User
) -> None:
    held_in_reach(api, owner, alice)
    NodeFactory.create(owner=bob, type="Project", label="Painting the zeppelin")  # out of reach
    params = reach_of(alice)
    counted = vocabulary_counted(CORPORA, params)
    assert counted is not None  # a reach of a few rows
    words = sorted(set(counted["chunk"]) - {""})
    # Held as written and as a stem, an English stop word, a version number, an address, parts of "re-painted".
    assert {"painted", "painting", "paint", "the", "4.12", "harbour", "cello", "paint.crew@example.test", "re"} <= set(
        words
    )
    assert "zeppelin" not in words
    cache.clear()
    assert counted == statistics_counted(CORPORA, words, params)  # the same N and df, word by word
    assert counted["chunk"]["paint"] >= 3  # held only as the stem of "painted", "painting" and "re-painted"


def test_a_new_word_has_a_thread_count_every_word_held_in_reach(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    held_in_reach(api, owner, alice)
    access = access_for_user(user=alice)
    first = search(access, SearchRequest(query="When was the garage door painted?", use_vector=False))
    drained("vocabulary")  # the thread has kept what it counted
    with CaptureQueriesContext(connection) as queries:
        later = search(access, SearchRequest(query="Which watercolours of the harbour?", use_vector=False))
    assert not [query for query in queries.captured_queries if "count(" in query["sql"]]  # every word was held
    assert "garage door" in first[0].text
    assert later[0].text == "The user paints watercolours of the harbour."
    with CaptureQueriesContext(connection) as queries:
        search(access, SearchRequest(query="Any zeppelins?", use_vector=False))
    assert [query for query in queries.captured_queries if "count(" in query["sql"]]  # held nowhere: counted


def test_the_cache_holds_digests_of_the_words_not_the_words(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    keys = list(cached_counts(alice))
    assert len(keys) > 40  # every word of the reach, in three corpora
    assert not [key for key in keys if "watercolour" in key or "harbour" in key or "garage" in key]


def test_no_vocabulary_is_counted_from_inside_a_transaction(alice: User) -> None:
    # The test's own transaction: a thread's connection would not see its rows, and would cache them as absent.
    assert connection.in_atomic_block
    assert not vocabulary_counted_soon(CORPORA, reach_of(alice), {"claim": 1, "chunk": 1, "node": 1})


def test_a_large_reach_is_counted_word_by_word(transactional_db: None, alice: User) -> None:
    totals = {"claim": word_statistics.VOCABULARY_ROWS + 1, "chunk": 0, "node": 0}
    assert not vocabulary_counted_soon(CORPORA, reach_of(alice), totals)
    assert vocabulary_counted_soon(CORPORA, reach_of(alice), {"claim": 1, "chunk": 0, "node": 0})
    drained("vocabulary")  # the thread took the reach's guard
    assert not vocabulary_counted_soon(CORPORA, reach_of(alice), {"claim": 1, "chunk": 0, "node": 0})  # once


def test_an_erasure_forgets_the_counted_vocabulary(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    from memory.recall.caching import drop_cached_views

    vocabulary_after_a_search(api, owner, alice)
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    assert cached_counts(alice) and list(redis.scan_iter(match=cache.make_key(f"recall:df:vocabulary:{alice.pk}:*")))
    assert any("df:size" in key for key in cached_counts(alice, every=True))  # the reach's size, kept a day
    drop_cached_views(alice.pk)  # as an erasure does
    assert not list(redis.scan_iter(match=cache.make_key(f"recall:df:*:{alice.pk}:*")))


def test_a_reachs_vocabulary_gives_each_words_query_as_postgresql_makes_it(
    api: Api, owner: Persona, alice: User
) -> None:
    held_in_reach(api, owner, alice)
    held_words._queries.clear()
    vocabulary_counted(CORPORA, reach_of(alice))
    known = dict(held_words._queries)
    assert {"painted", "the", "4.12", "harbour", "paint.crew@example.test"} <= set(known)
    assert known["painted"] == (("painted",), ("paint",)) and known["the"] == (("the",),)  # a stop word: itself
    held_words._queries.clear()
    with CaptureQueriesContext(connection) as asked:
        assert held_words.word_queries(list(known)) == known  # as PostgreSQL makes them, every word asked
    assert len(asked) == 1


def test_a_word_a_corpus_does_not_hold_is_kept_a_minute_unless_the_vocabulary_counted_it(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    claims = next(corpus for corpus in CORPORA if corpus.name == "claim")
    keys = word_statistics._stats_keys((claims,), ["garage", "watercolours", "zeppelin"], reach_of(alice))
    vocabulary_after_a_search(api, owner, alice)
    asked("Which zeppelin?", alice)  # held nowhere: counted on the path
    drained("vocabulary")
    held = cached_counts(alice)
    ttl = {word: held[cache.make_key(keys["claim", word])] for word in ("garage", "watercolours", "zeppelin")}
    assert 0 < ttl["zeppelin"] <= word_statistics.ABSENT_SECONDS
    # In a turn, in no claim; in a claim: as long as the reach's vocabulary, which weighs words while nothing changes.
    assert word_statistics.STATS_SECONDS < ttl["garage"] <= word_statistics.QUIET_SECONDS
    assert word_statistics.STATS_SECONDS < ttl["watercolours"] <= word_statistics.QUIET_SECONDS


def test_counts_a_search_makes_at_the_version_its_vocabulary_was_counted_at_are_kept_as_long(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    asked("Which paintings?", alice)  # held by its stem only: no word of the vocabulary, counted on the path
    drained("vocabulary")
    rows, ttl = held_counts(alice, "paintings")["chunk"]
    assert rows > 0 and word_statistics.STATS_SECONDS < ttl <= word_statistics.QUIET_SECONDS


def test_a_searchs_0s_kept_after_its_vocabulary_leave_the_vocabularys_as_they_were(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    held_in_reach(api, owner, alice)
    busy = threading.Event()
    process_pool("vocabulary", 1).submit(busy.wait, 30)
    try:
        asked("Which watercolours?", alice)  # its counts, then the reach's vocabulary, handed to the thread
        asked("Which garage?", alice)  # a turn holds it, no claim: its 0 kept after the vocabulary's
    finally:
        busy.set()
    drained("vocabulary")
    rows, ttl = held_counts(alice, "garage")["claim"]
    assert rows == 0 and word_statistics.STATS_SECONDS < ttl <= word_statistics.QUIET_SECONDS


def test_a_word_the_memory_does_not_hold_is_not_counted_again_until_a_write(
    transactional_db: None, api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    on_path = counted_on_the_path(monkeypatch)
    asked("Which zeppelin?", alice)  # held nowhere: counted on the path
    drained("vocabulary")
    ten_minutes_later(alice)  # its 0s, kept a minute, gone
    asked("Which zeppelin?", alice)
    assert on_path == [(name, ["zeppelin"]) for name in ("claim", "chunk", "node")]  # once
    drained("vocabulary")
    written(alice, "The user flew in a zeppelin.")
    found = search(access_for_user(user=alice), SearchRequest(query="Which zeppelin?", use_vector=False))
    assert found and "zeppelin" in found[0].text  # counted again (and N, the vocabulary's counts being of before)
    assert on_path[3:] == [(name, ["", "zeppelin"]) for name in ("claim", "chunk", "node")]


def test_counts_a_search_makes_after_a_write_are_kept_ten_minutes(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    written(alice, "The user tunes the cello.")
    asked("Which paintings?", alice)  # counted at a version the vocabulary was not: it vouches for nothing
    drained("vocabulary")
    rows, ttl = held_counts(alice, "paintings")["chunk"]
    assert rows > 0 and 0 < ttl <= word_statistics.STATS_SECONDS


def written(user: User, statement: str) -> None:
    """A claim of `user`'s, committed with its memory version changed, as every write of the services does."""
    with transaction.atomic():
        ClaimFactory.create(owner=user, statement=statement)
        memory_changed(user.pk)


def test_a_quiet_small_reach_weighs_words_by_its_vocabulary_for_an_hour(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    ten_minutes_later(alice)  # its guard and the counts made on the path gone, the vocabulary's held
    assert cached_counts(alice)
    statements = asked("Who painted the garage in watercolours?", alice)
    assert not counts_words(statements) and not counts_rows_in_reach(statements)  # nothing counted
    drained("vocabulary")
    assert not [key for key in cached_counts(alice, every=True) if ":df:vocabulary:" in key]  # nor handed on


@pytest.mark.parametrize("later", [False, True])
def test_after_a_write_a_small_reachs_vocabulary_weighs_words_no_longer(
    transactional_db: None, api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch, later: bool
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    if later:
        ten_minutes_later(alice)
    written(alice, "The user keeps the bikes in the garage.")  # a word the claims held none of
    on_path = counted_on_the_path(monkeypatch)
    found = search(access_for_user(user=alice), SearchRequest(query="What is in the garage?", use_vector=False))
    assert any("garage" in result.text and result.type == "claim" for result in found)  # its 0 was not weighed
    # Within ten minutes of the vocabulary's count its 0s are counted again, later every word.
    assert [words for name, words in on_path if name == "claim"] == [["", "garage"] if later else ["garage"]]


def test_after_a_write_a_vocabularys_0s_weigh_no_word_in_a_reach_grown_large(
    transactional_db: None, api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    written(alice, "The user keeps the bikes in the garage.")
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 2)  # its 4 turns are past it: a large reach now
    on_path = counted_on_the_path(monkeypatch)
    found = search(access_for_user(user=alice), SearchRequest(query="What is in the garage?", use_vector=False))
    assert any("garage" in result.text and result.type == "claim" for result in found)
    assert ("claim", ["garage"]) in on_path  # its 0 counted again, the counts other than 0 weighed as held


def test_a_reach_grown_since_its_rows_were_counted_is_counted_word_by_word(
    transactional_db: None, api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    held_in_reach(api, owner, alice)
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 3)  # alice's reach holds more turns than this now
    totals = {"claim": 1, "chunk": 1, "node": 1}  # as cached before the last turns came
    assert vocabulary_counted_soon(CORPORA, reach_of(alice), totals)
    drained("vocabulary")
    assert not cached_counts(alice)  # the thread counted the rows again first, and left the words alone


def test_an_erasure_while_the_vocabulary_is_counted_leaves_no_count_behind(
    transactional_db: None, api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.recall.caching import drop_cached_views

    held_in_reach(api, owner, alice)

    def counted_then_erased(corpora: Any, params: dict[str, Any]) -> dict[str, dict[str, int]] | None:
        counts = vocabulary_counted(corpora, params)
        drop_cached_views(alice.pk)  # the owner erased while the thread counted
        return counts

    monkeypatch.setattr(word_statistics, "vocabulary_counted", counted_then_erased)
    assert vocabulary_counted_soon(CORPORA, reach_of(alice), {"claim": 1, "chunk": 1, "node": 1})
    drained("vocabulary")
    assert not cached_counts(alice)


def test_a_full_queue_leaves_a_reach_to_be_counted_word_by_word(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "VOCABULARY_QUEUED", 0)
    assert not vocabulary_counted_soon(CORPORA, reach_of(alice), {"claim": 1, "chunk": 0, "node": 0})


def written_from(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that write word counts to Redis, in order, from now on."""
    threads: list[str] = []
    keep = word_statistics.keep_many

    def recorded(values: dict[str, Any], seconds: int) -> None:
        threads.append(threading.current_thread().name)
        keep(values, seconds)

    monkeypatch.setattr(word_statistics, "keep_many", recorded)
    return threads


def test_a_searchs_new_counts_reach_redis_from_the_thread_off_its_path(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    threads = written_from(monkeypatch)
    found = search(access_for_user(user=alice), SearchRequest(query="Which cello?", use_vector=False))
    drained("vocabulary")
    assert found[0].text == "The user is learning the cello."
    assert threads and all(name.startswith("vocabulary") for name in threads)
    assert cached_counts(alice)  # N and the word, in each corpus


def test_a_full_queue_keeps_a_searchs_counts_on_its_own_path(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    monkeypatch.setattr(word_statistics, "VOCABULARY_QUEUED", 0)
    threads = written_from(monkeypatch)
    search(access_for_user(user=alice), SearchRequest(query="Which cello?", use_vector=False))
    assert threads == [threading.current_thread().name] * len(threads) and threads
    assert cached_counts(alice)


def test_a_reachs_vocabulary_waiting_to_be_counted_is_not_handed_on_again(transactional_db: None, alice: User) -> None:
    totals, params = {"claim": 1, "chunk": 0, "node": 0}, reach_of(alice)
    busy = threading.Event()
    process_pool("vocabulary", 1).submit(busy.wait, 30)
    try:
        assert vocabulary_counted_soon(CORPORA, params, totals)
        assert not vocabulary_counted_soon(CORPORA, params, totals)  # waiting: its guard not yet taken
    finally:
        busy.set()
    drained("vocabulary")
    # Ten minutes on, and written to since (or an hour on): its guard, and the memory version it was counted at, gone.
    cache.delete_many(
        [word_statistics._vocabulary_guard(CORPORA, params), word_statistics._counted_key(CORPORA, params)]
    )
    assert vocabulary_counted_soon(CORPORA, params, totals)  # counted, it no longer waits
    drained("vocabulary")


def test_the_vocabulary_guard_is_taken_on_the_thread_and_once(
    transactional_db: None, api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    held_in_reach(api, owner, alice)
    takers: list[str] = []

    class Recorded:  # Django's cache, each thread's own, noting who takes the guard
        def __getattr__(self, name: str) -> Any:
            return getattr(cache, name)

        def add(self, key: str, *args: Any, **kwargs: Any) -> bool:
            takers.append(threading.current_thread().name)
            return bool(cache.add(key, *args, **kwargs))

    counted: list[int] = []
    count = word_statistics.vocabulary_counted

    def counting(*args: Any, **kwargs: Any) -> dict[str, dict[str, int]] | None:
        counted.append(1)
        return count(*args, **kwargs)

    monkeypatch.setattr(word_statistics, "cache", Recorded())
    monkeypatch.setattr(word_statistics, "vocabulary_counted", counting)
    totals = {"claim": 1, "chunk": 1, "node": 1}
    busy = threading.Event()
    process_pool("vocabulary", 1).submit(busy.wait, 30)  # the thread runs neither before both are handed on
    try:
        assert vocabulary_counted_soon(CORPORA, reach_of(alice), totals)
        # As another process would: its count waits in its own process, not in this one.
        threads.released("vocabulary", {word_statistics._vocabulary_guard(CORPORA, reach_of(alice))})
        assert vocabulary_counted_soon(CORPORA, reach_of(alice), totals)
        search(access_for_user(user=alice), SearchRequest(query="Which zeppelins?", use_vector=False))
    finally:
        busy.set()
    drained("vocabulary")
    assert counted == [1]
    assert takers and all(name.startswith("vocabulary") for name in takers)
    assert cached_counts(alice)


def erased_before_the_thread_keeps(user: User, query: str) -> None:
    """A search whose keeps wait behind other work on recall's thread, an erasure of the owner's meanwhile, and the
    thread's work done."""
    from memory.recall.caching import drop_cached_views

    busy = threading.Event()
    process_pool("vocabulary", 1).submit(busy.wait, 30)
    try:
        search(access_for_user(user=user), SearchRequest(query=query, use_vector=False))
        drop_cached_views(user.pk)  # the owner erased something: what the search counted or read may predate it
    finally:
        busy.set()
    drained("vocabulary")


def test_an_erasure_before_the_thread_keeps_a_searchs_counts_leaves_none_behind(alice: User) -> None:
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    erased_before_the_thread_keeps(alice, "Which cello?")
    assert not cached_counts(alice)
    search(access_for_user(user=alice), SearchRequest(query="Which cello?", use_vector=False))
    drained("vocabulary")
    assert cached_counts(alice)  # counted after it: kept


def held_counts(user: User, word: str) -> dict[str, tuple[int, int]]:
    """The counts of `word` (N's: "") cached for `user`'s own reach, per corpus: the count and its time to live."""
    keys = word_statistics._stats_keys(CORPORA, [word], reach_of(user))
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    held = cache.get_many(list(keys.values()))
    return {name: (held[key], redis.ttl(cache.make_key(key))) for (name, _), key in keys.items() if key in held}


def fresh_for(user: User, word: str) -> int:
    """Seconds `word`'s counts (N's: "") stay fresh in `user`'s own reach (-2: they are stale)."""
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    key = word_statistics._fresh_keys(CORPORA, [word], reach_of(user))[word]
    return int(redis.ttl(cache.make_key(key)))


def made_stale(user: User, *words: str) -> None:
    """As STATS_SECONDS after the words' count: their marks gone, their counts held."""
    cache.delete_many(list(word_statistics._fresh_keys(CORPORA, list(words), reach_of(user)).values()))


def asked(query: str, user: User) -> list[str]:
    """The statements a keyword search sends from this thread."""
    with CaptureQueriesContext(connection) as queries:
        search(access_for_user(user=user), SearchRequest(query=query, use_vector=False))
    return [query["sql"] for query in queries.captured_queries]


def counts_rows_in_reach(statements: list[str]) -> bool:
    return any(f"LIMIT {word_statistics.N_CAP}" in sql for sql in statements)


def counts_words(statements: list[str]) -> bool:
    return any("FROM unnest(" in sql and "AS w(word) OFFSET 0" in sql for sql in statements)


def recounts(monkeypatch: pytest.MonkeyPatch, also: Callable[[], None] | None = None) -> list[list[str]]:
    """The words of each count again on the thread from now on, once it has counted (`also` runs after each)."""
    counted: list[list[str]] = []
    fetch = word_statistics._fetched

    def fetching(scans: list[str], values: dict[str, Any]) -> Any:
        found = fetch(scans, values)
        if threading.current_thread().name.startswith("vocabulary"):
            counted.append(sorted({word for _, word, _ in found if word is not None}))
            if also is not None:
                also()
        return found

    monkeypatch.setattr(word_statistics, "_fetched", fetching)
    return counted


def test_on_a_large_memory_a_count_of_rows_held_is_kept_a_day_and_fresh_ten_minutes(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)  # every reach holding rows is large
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    NodeFactory.create(owner=alice, type="Project", label="Cello lessons")
    statements = asked("Which cello?", alice)
    assert counts_rows_in_reach(statements) and counts_words(statements)
    drained("vocabulary")
    for word in ("", "cello"):
        held = held_counts(alice, word)
        assert {name: count for name, (count, _) in held.items()} == {"claim": 1, "chunk": 0, "node": 1}
        assert all(
            word_statistics.STATS_SECONDS < held[name][1] <= word_statistics.KEPT_SECONDS for name in ("claim", "node")
        )
        assert 0 < held["chunk"][1] <= word_statistics.ABSENT_SECONDS  # none yet: the next turns may bring some
        assert 0 < fresh_for(alice, word) <= word_statistics.STATS_SECONDS
    counted = recounts(monkeypatch)
    assert not counts_rows_in_reach(asked("Which cello?", alice))
    drained("vocabulary")
    assert counted == []  # fresh: nothing handed on either


def test_stale_counts_are_used_and_counted_again_off_the_searchs_path(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)  # counted word by word, as a large reach is
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    NodeFactory.create(owner=alice, type="Project", label="Cello lessons")
    asked("Which cello?", alice)
    drained("vocabulary")
    ClaimFactory.create(owner=alice, statement="The user tunes the cello weekly.")
    made_stale(alice, "", "cello")
    counted = recounts(monkeypatch)
    busy = threading.Event()
    process_pool("vocabulary", 1).submit(busy.wait, 30)
    try:
        statements = asked("Who has a cello?", alice)
        assert not counts_rows_in_reach(statements) and not counts_words(statements)
        assert held_counts(alice, "")["claim"][0] == held_counts(alice, "cello")["claim"][0] == 1  # as it had them
    finally:
        busy.set()
    drained("vocabulary")
    assert counted == [["", "cello"]]
    assert held_counts(alice, "")["claim"][0] == held_counts(alice, "cello")["claim"][0] == 2
    assert 0 < fresh_for(alice, "") <= word_statistics.STATS_SECONDS
    assert 0 < fresh_for(alice, "cello") <= word_statistics.STATS_SECONDS


def cello_counted_then_stale(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large reach (counted word by word) whose one claim of "cello" was counted, then a second claim, and the
    counts of N and "cello" stale: held, no longer marked fresh."""
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)
    ClaimFactory.create(owner=user, statement="The user is learning the cello.")
    asked("Which cello?", user)
    drained("vocabulary")
    ClaimFactory.create(owner=user, statement="The user tunes the cello weekly.")
    made_stale(user, "", "cello")


def test_a_count_again_waits_for_the_searches_in_flight_and_a_searchs_own_counts_do_not(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(threads, "SEARCHES_WAITED", 60)
    cello_counted_then_stale(alice, monkeypatch)
    counted = recounts(monkeypatch)
    with threads.searching():  # another search in flight, in this process
        asked("Who tunes the cello weekly?", alice)  # "cello" stale, "weekly" new: counted on its path
        for _ in range(100):  # its own counts reach Redis at once, not behind the count again
            if held_counts(alice, "weekly"):
                break
            threading.Event().wait(0.05)
        assert held_counts(alice, "weekly")["claim"][0] == 1
        assert counted == []  # the count again waits for the search in flight
    drained("vocabulary")
    assert counted == [["", "cello"]]
    assert held_counts(alice, "cello")["claim"][0] == 2


def test_a_stale_word_no_longer_counted_as_absent_somewhere_is_counted_again_too(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    cello_counted_then_stale(alice, monkeypatch)
    stats = word_statistics._stats_keys(CORPORA, ["", "cello"], reach_of(alice))
    cache.delete_many([stats["chunk", ""], stats["chunk", "cello"], stats["node", ""], stats["node", "cello"]])  # 0s
    counted = recounts(monkeypatch)
    asked("Who has a cello?", alice)  # counts them in chunks and nodes, and hands them on for claims
    drained("vocabulary")
    assert counted == [["", "cello"]]
    assert held_counts(alice, "")["claim"][0] == held_counts(alice, "cello")["claim"][0] == 2


def test_a_small_memorys_counts_are_kept_an_hour_at_most_and_never_counted_again_off_the_path(
    transactional_db: None, api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    assert all(0 < ttl <= word_statistics.QUIET_SECONDS for ttl in cached_counts(alice).values())
    assert fresh_for(alice, "") == fresh_for(alice, "watercolours") == -2  # nothing marked
    counted = recounts(monkeypatch)
    assert not counts_words(asked("Who painted the cello?", alice))  # the vocabulary's counts
    drained("vocabulary")
    assert counted == []


def test_searches_that_find_counts_stale_at_once_have_each_word_counted_once(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    counted = recounts(monkeypatch)
    busy = threading.Event()
    process_pool("vocabulary", 1).submit(busy.wait, 30)
    try:
        for _ in range(word_statistics.VOCABULARY_QUEUED + 1):  # more than the thread's queue holds
            assert word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), ["", "cello"])
        assert word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), ["cello", "user"])  # "user" only
        for word in ("learning", "plays"):  # up to RECOUNTS_QUEUED waiting, then refused
            assert word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), [word])
        assert not word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), ["zeppelin"])
        # The rest of the queue is kept for the vocabulary and the searches' own counts.
        assert vocabulary_counted_soon(CORPORA, reach_of(alice), {"claim": 1, "chunk": 0, "node": 0})
    finally:
        busy.set()
    drained("vocabulary")
    assert counted == [["", "cello"], ["user"], ["learning"], ["plays"], [""]]  # the last: the vocabulary's N
    assert held_counts(alice, "")["claim"][0] == 1
    assert not threads._claimed["vocabulary"]  # each given back once counted, the refused one at once
    assert word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), ["zeppelin"])
    drained("vocabulary")
    assert counted[-1] == ["zeppelin"] and not threads._claimed["vocabulary"]


def test_an_erasure_leaves_another_owners_counts_and_marks(
    transactional_db: None, alice: User, bob: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.recall.caching import drop_cached_views

    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)
    for user in (alice, bob):
        ClaimFactory.create(owner=user, statement="The user is learning the cello.")
        asked("Which cello?", user)
    drained("vocabulary")
    drop_cached_views(alice.pk)
    assert not cached_counts(alice) and fresh_for(alice, "cello") == -2
    assert held_counts(bob, "cello")["claim"][0] == 1 and fresh_for(bob, "cello") > 0


def test_no_count_is_kept_long_from_inside_a_transaction(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    assert connection.in_atomic_block  # the test's own: its rows are not committed
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    asked("Which cello?", alice)
    drained("vocabulary")
    assert cached_counts(alice)
    assert all(0 < ttl <= word_statistics.STATS_SECONDS for ttl in cached_counts(alice).values())
    assert fresh_for(alice, "") == fresh_for(alice, "cello") == -2


def test_counts_again_of_a_reach_small_again_are_kept_as_a_small_reachs(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)
    asked("Which cello?", alice)
    drained("vocabulary")
    assert held_counts(alice, "cello")["claim"][1] > word_statistics.STATS_SECONDS
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 2_000)  # rows forgotten since: a small reach again
    made_stale(alice, "cello")
    assert word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), ["cello"])
    drained("vocabulary")
    assert 0 < held_counts(alice, "cello")["claim"][1] <= word_statistics.STATS_SECONDS


def test_a_word_another_process_counts_again_is_not_counted_here(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    counted = recounts(monkeypatch)
    cache.add(word_statistics._fresh_keys(CORPORA, [""], reach_of(alice))[""], 1, 60)  # another process took it
    assert word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), ["", "cello"])
    drained("vocabulary")
    assert counted == [["cello"]]


def test_nothing_is_counted_again_from_inside_a_transaction(alice: User) -> None:
    assert connection.in_atomic_block
    assert not word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), ["", "cello"])


def test_an_erasure_while_counts_are_counted_again_leaves_none_behind(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.recall.caching import drop_cached_views

    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    recounts(monkeypatch, also=lambda: drop_cached_views(alice.pk))  # the owner erased while the thread counted
    assert word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), ["", "cello"])
    drained("vocabulary")
    assert not held_counts(alice, "") and not held_counts(alice, "cello")
    assert fresh_for(alice, "") == fresh_for(alice, "cello") == -2


def test_an_erasure_before_a_full_queues_counts_are_kept_on_the_searchs_path_leaves_none_behind(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.recall.caching import drop_cached_views

    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    monkeypatch.setattr(word_statistics, "VOCABULARY_QUEUED", 0)
    keep = word_statistics._Counted.kept

    def erased_then_kept(self: Any) -> None:
        drop_cached_views(alice.pk)  # the owner erased after the search counted, before it kept the counts
        keep(self)

    monkeypatch.setattr(word_statistics._Counted, "kept", erased_then_kept)
    search(access_for_user(user=alice), SearchRequest(query="Which cello?", use_vector=False))
    assert not cached_counts(alice)


def test_a_failed_count_again_is_logged_and_keeps_the_counts_held(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    asked("Which cello?", alice)
    drained("vocabulary")
    made_stale(alice, "", "cello")

    def failing(scans: list[str], values: dict[str, Any]) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(word_statistics, "_fetched", failing)
    assert word_statistics.counts_recounted_soon(CORPORA, reach_of(alice), ["", "cello"])
    drained("vocabulary")
    assert "recall.counts_not_counted_again" in caplog.messages
    assert held_counts(alice, "")["claim"][0] == held_counts(alice, "cello")["claim"][0] == 1


@pytest.mark.parametrize("name", ["claim", "chunk"])
def test_an_index_holds_every_column_of_a_reach(name: str) -> None:
    """So N is counted from the index alone (an index-only scan), not from every row of a large memory."""
    corpus = next(corpus for corpus in CORPORA if corpus.name == name)
    table = corpus.table.split()[0]
    columns = set(re.findall(r"\bc\.(\w+)", corpus.reach))
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT i.indexrelid::regclass::text, array_agg(a.attname::text)
            FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
            WHERE i.indrelid = %s::regclass AND i.indpred IS NULL GROUP BY i.indexrelid""",
            [table],
        )
        covering = [index for index, held in cursor.fetchall() if columns <= set(held)]
    assert columns == (
        {"owner_id", "partition_id", "status", "scope"} if name == "claim" else {"owner_id", "partition_id", "scope"}
    )
    assert covering == [f"{name}_reach"]


def test_an_erasure_changes_its_mark_before_it_deletes_the_counts(
    transactional_db: None, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So counts counted before it and kept by a thread after its delete see the mark changed, and go again."""
    import redis

    from memory.recall.caching import drop_cached_views, dropped_key

    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    asked("Which cello?", alice)
    drained("vocabulary")
    before = cache.get(dropped_key(alice.pk))
    seen: list[Any] = []
    delete = redis.Redis.delete

    def deleting(self: Any, *names: Any) -> Any:
        seen.append(cache.get(dropped_key(alice.pk)))
        return delete(self, *names)

    monkeypatch.setattr(redis.Redis, "delete", deleting)
    drop_cached_views(alice.pk)
    assert seen and all(mark not in (None, before) for mark in seen)
    assert not cached_counts(alice)


@pytest.fixture
def practised(transactional_db: None) -> Iterator[Callable[[User], None]]:
    """Makes 40 claims of a user's that hold "practises", and planner statistics that know the word; those statistics
    cleared after the test, as a new database has none (a table emptied keeps the statistics it had)."""

    def made(user: User) -> None:
        for day in range(40):
            ClaimFactory.create(owner=user, statement=f"The user practises the cello on day {day}.")
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memory_claim")

    yield made
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT pg_clear_relation_stats('public', 'memory_claim'),
                      count(pg_clear_attribute_stats('public', 'memory_claim', attname, false))
               FROM pg_attribute WHERE attrelid = 'memory_claim'::regclass AND attnum > 0 AND NOT attisdropped"""
        )


def counted_on_the_path(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """The words each corpus's count on a search's own thread asks for from now on (N's: "")."""
    counted: list[tuple[str, list[str]]] = []
    scans = word_statistics._scans

    def scanning(corpus: Any, number: int, words: list[str], values: dict[str, Any]) -> list[str]:
        if not threading.current_thread().name.startswith("vocabulary") and words:
            counted.append((corpus.name, list(words)))
        return scans(corpus, number, words, values)

    monkeypatch.setattr(word_statistics, "_scans", scanning)
    return counted


def test_the_planner_estimates_the_rows_of_the_words_it_knows_only(
    practised: Callable[[User], None], alice: User
) -> None:
    practised(alice)
    claims = [corpus for corpus in CORPORA if corpus.name == "claim"]
    planned = word_statistics._planned_rows(claims, ["practises", "cello", "zeppelin"], reach_of(alice), {"claim": 40})
    assert set(planned["claim"]) == {"practises", "cello"}  # a word held nowhere has the estimate of the unknown
    assert all(30 <= rows <= 40 for rows in planned["claim"].values())  # 40 rows of 40 hold each


def test_words_of_any_shape_are_planned_as_parameters(practised: Callable[[User], None], alice: User) -> None:
    practised(alice)
    claims = [corpus for corpus in CORPORA if corpus.name == "claim"]
    odd = ["o'brien", "re-painted", "paint.crew@example.test", "4.12", "ünïcode", "x); DROP TABLE memory_claim; --"]
    planned = word_statistics._planned_rows(claims, ["practises", *odd], reach_of(alice), {"claim": 40})
    assert set(planned["claim"]) == {"practises"}  # none of the others is known to the planner: counted instead
    assert Claim.objects.filter(owner=alice).count() == 40  # the table as it was


def test_nothing_is_estimated_where_the_reach_is_under_half_its_table(
    practised: Callable[[User], None], alice: User, bob: User
) -> None:
    for day in range(50):
        ClaimFactory.create(owner=bob, statement=f"The user practises the violin on day {day}.")
    practised(alice)  # 40 of the table's 90 rows
    claims = [corpus for corpus in CORPORA if corpus.name == "claim"]
    assert word_statistics._planned_rows(claims, ["practises"], reach_of(alice), {"claim": 40}) == {}


def test_an_estimate_is_a_share_of_the_rows_in_reach_as_counted(
    practised: Callable[[User], None], alice: User, bob: User
) -> None:
    for day in range(30):
        ClaimFactory.create(owner=bob, statement=f"The user plays the violin on day {day}.")
    practised(alice)  # 40 of the table's 70 rows, every one of them holding "practises"
    claims = [corpus for corpus in CORPORA if corpus.name == "claim"]
    planned = word_statistics._planned_rows(claims, ["practises"], reach_of(alice), {"claim": 40})
    # The planner takes alice's owner and partition for independent: it expects 13 of her rows to hold the word out
    # of 23 in reach. As a share of her 40 rows: 23. Left: the word's share of the whole table, 40 of 70.
    assert 20 <= planned["claim"]["practises"] <= 40


def test_where_ns_count_stopped_the_planners_rows_in_reach_stand(
    practised: Callable[[User], None], alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "N_CAP", 10)  # N counted up to 10 of alice's 40 rows
    practised(alice)
    claims = [corpus for corpus in CORPORA if corpus.name == "claim"]
    planned = word_statistics._planned_rows(claims, ["practises"], reach_of(alice), {"claim": 10})
    assert 30 <= planned["claim"]["practises"] <= 40  # a share of 40 rows, not of 10


def test_a_count_held_in_a_corpus_is_not_estimated_there(
    practised: Callable[[User], None], alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "ESTIMATED_ROWS", 0)
    practised(alice)
    held = {"claim": {"": 40, "practises": 7}, "chunk": {"": 40}, "node": {"": 0}}  # claims' count held, chunks' not
    assert "practises" not in word_statistics._estimated(CORPORA, ["practises"], reach_of(alice), held).get("claim", {})


def test_on_a_vast_memory_a_new_words_rows_are_estimated_and_counted_on_the_thread(
    practised: Callable[[User], None], alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)  # counted word by word, as a large reach is
    monkeypatch.setattr(word_statistics, "ESTIMATED_ROWS", 0)  # every corpus holding rows is vast
    practised(alice)
    asked("Which cello?", alice)  # N counted: none held yet, nothing estimated
    drained("vocabulary")
    on_path, recounted = counted_on_the_path(monkeypatch), recounts(monkeypatch)
    busy = threading.Event()
    process_pool("vocabulary", 1).submit(busy.wait, 30)
    try:
        found = search(
            access_for_user(user=alice), SearchRequest(query="Who practises the zeppelin?", use_vector=False)
        )
        assert found and "practises" in found[0].text  # weighed by the estimate
        # Claims hold rows: "practises" estimated there, "zeppelin" (unknown to the planner) counted; the other
        # corpora hold none: both counted.
        assert on_path == [
            ("claim", ["zeppelin"]),
            ("chunk", ["practises", "zeppelin"]),
            ("node", ["practises", "zeppelin"]),
        ]
        assert held_counts(alice, "practises") == {}  # nothing kept yet: the thread is busy
    finally:
        busy.set()
    drained("vocabulary")
    assert recounted == [["practises"]]  # counted in every corpus on the thread
    assert held_counts(alice, "practises")["claim"][0] == 40
    assert 0 < fresh_for(alice, "practises") <= word_statistics.STATS_SECONDS


def test_a_word_counted_within_ten_minutes_is_counted_on_the_path_not_estimated(
    practised: Callable[[User], None], alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)
    monkeypatch.setattr(word_statistics, "ESTIMATED_ROWS", 0)
    practised(alice)
    asked("Which cello?", alice)
    asked("Who practises?", alice)
    drained("vocabulary")  # counted on the thread, marked fresh
    stats = word_statistics._stats_keys(CORPORA, ["practises"], reach_of(alice))
    cache.delete(stats["claim", "practises"])  # as a count of 0 kept a minute would be gone, its mark still held
    on_path = counted_on_the_path(monkeypatch)
    asked("Who practises daily?", alice)
    assert ("claim", ["practises", "daily"]) in on_path  # the thread would not count it again while it is fresh


def test_a_word_the_thread_cannot_take_is_estimated_again_by_the_next_search(
    practised: Callable[[User], None], alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)
    monkeypatch.setattr(word_statistics, "ESTIMATED_ROWS", 0)
    monkeypatch.setattr(word_statistics, "RECOUNTS_QUEUED", 0)  # the thread's queue for counts again is full
    practised(alice)
    asked("Which cello?", alice)
    drained("vocabulary")
    on_path = counted_on_the_path(monkeypatch)
    for _ in range(2):
        assert any(sql.startswith("EXPLAIN (FORMAT JSON)") for sql in asked("Who practises?", alice))
        drained("vocabulary")
    assert ("claim", ["practises"]) not in on_path
    assert "claim" not in held_counts(alice, "practises")  # an estimate is never kept


def test_nothing_is_estimated_inside_a_transaction(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(word_statistics, "ESTIMATED_ROWS", 0)
    assert connection.in_atomic_block  # the test's own: its rows are not the thread's to count
    held, params = {"claim": {"": 40}, "chunk": {"": 0}, "node": {"": 0}}, reach_of(alice)
    with CaptureQueriesContext(connection) as queries:
        assert word_statistics._estimated(CORPORA, ["practises"], params, held) == {}
    assert not queries.captured_queries  # not even planned: counted on the path


def test_a_reachs_first_search_counts_n_first_and_estimates_a_vast_corpuss_words(
    practised: Callable[[User], None], alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_statistics, "VOCABULARY_ROWS", 0)
    monkeypatch.setattr(word_statistics, "ESTIMATED_ROWS", 0)
    practised(alice)  # nothing cached: the reach's first search, as after an erasure
    on_path, recounted = counted_on_the_path(monkeypatch), recounts(monkeypatch)
    statements = asked("Who practises?", alice)
    counting_n = [sql for sql in statements if f"LIMIT {word_statistics.N_CAP}" in sql]
    assert len(counting_n) == 1 and "FROM unnest(" not in counting_n[0]  # N alone, ahead of the words
    assert not [words for name, words in on_path if name == "claim"]  # estimated there
    drained("vocabulary")
    assert recounted == [["practises"]]
    assert held_counts(alice, "")["claim"][0] == held_counts(alice, "practises")["claim"][0] == 40


def test_a_small_reach_asked_ten_minutes_later_counts_n_with_its_words(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    (size,) = [ttl for key, ttl in cached_counts(alice, every=True).items() if "df:size" in key]
    assert word_statistics.STATS_SECONDS < size <= word_statistics.KEPT_SECONDS  # the reach's size, kept a day
    ten_minutes_later(alice)
    written(alice, "The user tunes the cello.")  # the vocabulary's counts no longer weigh words: N not held
    counting_n = [sql for sql in asked("Who paints the cello?", alice) if f"LIMIT {word_statistics.N_CAP}" in sql]
    assert len(counting_n) == 1 and "FROM unnest(" in counting_n[0]  # one statement: the reach is too small to estimate
    drained("vocabulary")  # the new count is kept by recall's thread
    assert held_counts(alice, "")["claim"][0] == 3


def test_a_reach_last_counted_past_the_estimates_size_counts_n_first_again(
    transactional_db: None, api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocabulary_after_a_search(api, owner, alice)
    monkeypatch.setattr(word_statistics, "ESTIMATED_ROWS", 1)  # alice's 2 claims and 4 turns are past it
    ten_minutes_later(alice)
    written(alice, "The user tunes the cello.")
    counting_n = [sql for sql in asked("Who paints the cello?", alice) if f"LIMIT {word_statistics.N_CAP}" in sql]
    assert len(counting_n) == 1 and "FROM unnest(" not in counting_n[0]  # N alone, ahead of the words


def test_inside_a_transaction_n_is_counted_with_the_words(alice: User) -> None:
    ClaimFactory.create(owner=alice, statement="The user is learning the cello.")
    counting_n = [sql for sql in asked("Which cello?", alice) if f"LIMIT {word_statistics.N_CAP}" in sql]
    assert len(counting_n) == 1 and "FROM unnest(" in counting_n[0]  # one statement: nothing is estimated here

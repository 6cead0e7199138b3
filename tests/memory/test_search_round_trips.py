"""What one search costs in round trips besides its legs' own work: each leg one statement for every corpus and time
window (the vector leg's settings included), the recall caches read once, and the query embedded while the keyword
legs run."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.access import Access, access_for_user
from memory.embeddings import EmbedderUnavailable, get_embedder
from memory.models import Claim, User
from memory.pipeline.runner import run_operation
from memory.recall import legs, word_statistics
from memory.recall.corpora import CORPORA
from memory.recall.search import SearchRequest, search
from memory.recall.threads import drained, process_pool
from tests.factories import ClaimFactory
from tests.memory.test_recall_word_statistics import reach_of
from tests.round_trips import round_trips

pytestmark = pytest.mark.django_db


def remember(owner: User, statement: str) -> None:
    embedder = get_embedder()
    vector = embedder.embed_documents([statement])[0]
    ClaimFactory.create(owner=owner, statement=statement, embedding=vector, embedding_model=embedder.model_id)


TEA_SAMPLES = {"id": "m1", "role": "user", "content": "I'll send the tea samples to Marcel by Friday.",
               "timestamp": "2026-04-22T09:00:00Z"}  # fmt: skip


TEA_SHOP = {"id": "m2", "role": "assistant", "content": "The tea shop in Lisbon packs samples too.",
            "timestamp": "2026-04-22T09:01:00Z"}  # fmt: skip


def tea_for_marcel(api: Any, owner: Any, alice: User) -> Access:
    """Two turns about tea samples and a claim about Marcel: a store whose search shows all three corpora."""
    processed(api, owner, TEA_SAMPLES, TEA_SHOP)
    remember(alice, "Marcel prefers green tea samples.")
    return access_for_user(user=alice)


def processed(api: Any, owner: Any, *messages: dict[str, Any]) -> None:
    """A conversation of these messages ingested over REST and run through the pipeline in this process."""
    body = {"conversation": {"id": "chat", "messages": list(messages)}}
    run_operation(api.post("/ingest/conversation", owner, body).json()["operationId"])


def through_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reach searched through the HNSW index, as one of more than EXACT_ROWS rows is."""
    monkeypatch.setattr(legs, "EXACT_ROWS", -1)


@pytest.mark.parametrize("reach", ["small", "large"])
def test_the_vector_legs_and_their_settings_are_one_round_trip(
    alice: User, reach: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if reach == "large":
        through_the_index(monkeypatch)
    remember(alice, "Marcel drinks green tea every morning.")
    access = access_for_user(user=alice)
    found: list[Any] = []
    trips = round_trips(lambda: found.extend(search(access, SearchRequest(query="What does Marcel drink?"))))
    assert found[0].text == "Marcel drinks green tea every morning."
    vector = [trip for trip in trips if any("<=>" in text for text in trip)]
    assert len(vector) == 1  # every corpus in one statement, sent with its settings
    settings, scans = vector[0]
    assert "set_config('plan_cache_mode'" in settings  # generic or custom: test_the_*_planned_* below
    if reach == "large":
        assert "set_config('hnsw.ef_search'" in settings and "set_config('hnsw.iterative_scan'" in settings
        assert ") + 0" not in scans
    else:  # every row's distance, sorted, by a plan kept for the connection
        assert "set_config('enable_seqscan'" in settings and "hnsw" not in settings
        assert ") + 0 AS distance" in scans
    assert "<=>" in scans
    assert len([text for trip in trips for text in trip if "set_config" in text and "plan_cache_mode" in text]) == 2
    assert not [text for trip in trips for text in trip if text.startswith(("SAVEPOINT", "RELEASE", "BEGIN", "COMMIT"))]


def vector_score(result: Any) -> float:
    return float(result.candidate.legs["vector"]["score"])


def test_a_small_reach_searched_exactly_finds_what_the_index_finds(
    api: Any, owner: Any, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    access = tea_for_marcel(api, owner, alice)
    remember(alice, "Marcel drinks green tea every morning.")
    questions = ["tea samples for Marcel", "Where is the tea shop?", "What does Marcel drink?", "Friday"]
    asked = [SearchRequest(query=question, limit=20, use_keyword=False) for question in questions]
    search(access, SearchRequest(query=" ".join(questions)))  # the owner's rows counted and cached
    drained("vocabulary")  # the thread has kept them
    assert legs.searched_exactly(CORPORA, reach_of(alice))
    exactly = [{result.candidate.id: vector_score(result) for result in search(access, ask)} for ask in asked]
    through_the_index(monkeypatch)
    assert not legs.searched_exactly(CORPORA, reach_of(alice))
    indexed = [{result.candidate.id: vector_score(result) for result in search(access, ask)} for ask in asked]
    # The index is approximate: on the test database, full of the dead entries of rolled-back tests, it can miss a
    # row (a fresh clone's CI once missed two claims). What it finds, the exact scan finds with the same similarity.
    assert all(exactly) and all(found.items() <= exact.items() for found, exact in zip(indexed, exactly, strict=True))


def test_an_exact_search_never_plans_a_sequential_scan(alice: User) -> None:
    remember(alice, "Marcel drinks green tea every morning.")
    search(access_for_user(user=alice), SearchRequest(query="What does Marcel drink?"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%%) + 0 AS distance%%'")
        (statement,) = cursor.fetchone()
        # The plan the connection keeps is made under the leg's own settings; these tables hold a row or two, so
        # without them the planner would read each whole table.
        for name, value in legs._EXACT_SETTINGS.items():
            cursor.execute("SELECT set_config(%s, %s, true)", [name, value])
        cursor.execute(f"EXPLAIN (GENERIC_PLAN) {statement}")
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "Index Scan" in plan
    assert "Seq Scan" not in plan, plan


def test_the_statements_a_search_repeats_are_prepared_on_its_connection(alice: User) -> None:
    remember(alice, "Marcel drinks green tea every morning.")
    for _ in range(6):  # Django's own statements bind on the client: never prepared, however often they run
        assert User.objects.filter(pk=alice.pk).exists()
    search(access_for_user(user=alice), SearchRequest(query="What does Marcel drink?"))
    # The next search on this connection sends their names and values, not their text to parse and plan again.
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [statement for (statement,) in cursor.fetchall()]
    for read in ("<=>", "set_config('enable_seqscan'", "FROM memory_evidence e", "FROM memory_claim c JOIN"):
        assert [statement for statement in prepared if read in statement], read
    assert not [statement for statement in prepared if "memory_user" in statement]
    # And off again for everything else on the connection: psycopg would count every statement Django sends.
    assert connection.connection.prepare_threshold is None


def test_the_rows_shown_are_planned_once_per_connection(api: Any, owner: Any, alice: User) -> None:
    access = tea_for_marcel(api, owner, alice)
    for _ in range(3):
        results = search(access, SearchRequest(query="tea samples for Marcel", limit=20))
    assert {"claim", "chunk", "node"} <= {result.type for result in results}
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        plans = {statement: (generic, custom) for statement, generic, custom in cursor.fetchall()}
    for read in ("memory_evidence e JOIN", "memory_claim c JOIN", "memory_chunk c JOIN", "memory_node n JOIN"):
        ((generic, custom),) = [counts for statement, counts in plans.items() if read in statement]
        assert (generic, custom) == (3, 0), read  # a generic plan each time: looked up by id, never planned again
    vector = [counts for statement, counts in plans.items() if "<=>" in statement]
    assert vector and all(generic and not custom for generic, custom in vector)  # a small reach: read exactly


def test_the_index_scans_are_planned_for_each_search(
    api: Any, owner: Any, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    through_the_index(monkeypatch)
    access = tea_for_marcel(api, owner, alice)
    for _ in range(3):
        search(access, SearchRequest(query="tea samples for Marcel", limit=20))
    with connection.cursor() as cursor:
        cursor.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%%<=>%%'")
        vector = cursor.fetchall()
    # Planned for each search's own values: a plan kept for all would be the first owner's, small or large.
    assert vector and all(custom == 3 and not generic for generic, custom in vector)
    with connection.cursor() as cursor:  # its settings' statement is prepared too
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%%hnsw.ef_search%%'")
        assert cursor.fetchone() == (1,)


SETTINGS = (
    "SELECT current_setting('hnsw.ef_search', true), current_setting('hnsw.iterative_scan', true),"
    " current_setting('plan_cache_mode'), current_setting('enable_seqscan'),"
    " current_setting('max_parallel_workers_per_gather')"
)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("reach", ["small", "large"])
def test_the_vector_settings_end_with_the_search(alice: User, reach: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if reach == "large":
        through_the_index(monkeypatch)
    remember(alice, "Marcel drinks green tea every morning.")
    with connection.cursor() as cursor:
        cursor.execute(SETTINGS)
        *_, workers = cursor.fetchone()  # the server's own value
    trips = round_trips(lambda: search(access_for_user(user=alice), SearchRequest(query="What does Marcel drink?")))
    assert [text for trip in trips for text in trip if ("enable_seqscan" in text) == (reach == "small")]
    with connection.cursor() as cursor:  # the same connection, after the search (autocommit)
        cursor.execute(SETTINGS)
        ef_search, iterative, plan_cache_mode, seqscan, after = cursor.fetchone()
    assert ef_search in (None, "", "40")  # unset, or pgvector's default once loaded
    assert iterative in (None, "", "off")
    assert (plan_cache_mode, seqscan, after) == ("auto", "on", workers)


def _redis_calls(run: Callable[[], Any]) -> dict[str, int]:
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    redis.config_resetstat()
    run()
    calls = {name: stats["calls"] for name, stats in redis.info("commandstats").items()}
    calls.pop("cmdstat_config", None)
    return calls


def test_a_warmed_search_reads_the_recall_caches_in_one_round_trip(alice: User) -> None:
    remember(alice, "Marcel drinks green tea every morning.")
    access = access_for_user(user=alice)
    asked = SearchRequest(query="What does Marcel drink in the morning?")
    search(access, asked)  # word statistics, the newest source and the speakers named are cached from here on
    drained("vocabulary")  # the thread has kept the word counts
    calls = _redis_calls(lambda: search(access, asked))
    # Word statistics of three corpora, the reference time and the speakers named: one MGET for all of them;
    # the access bookkeeping of the claims returned is the other round trip (a pipeline of HINCRBY).
    assert calls.pop("cmdstat_mget") == 1
    assert set(calls) <= {"cmdstat_hincrby"}


def test_a_cold_search_still_computes_and_keeps_what_it_did_not_find(alice: User) -> None:
    remember(alice, "Marcel drinks green tea every morning.")
    access = access_for_user(user=alice)
    asked = SearchRequest(query="What does Marcel drink in the morning?")
    cold = search(access, asked)
    drained("vocabulary")  # the thread has kept the word counts
    with CaptureQueriesContext(connection) as warm_queries:
        warm = search(access, asked)
    assert [result.candidate.id for result in warm] == [result.candidate.id for result in cold]
    # Warm: nothing recounted (no count(*) of rows or words, no newest source, no speaker lookup).
    sql = " ".join(query["sql"] for query in warm_queries.captured_queries)
    assert "count(*)" not in sql and "max(newest)" not in sql and "split_part" not in sql


@pytest.mark.parametrize("step", ["first", "second"])
def test_a_search_whose_embedding_fails_in_either_step_answers_by_keyword(
    alice: User, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    remember(alice, "Marcel drinks green tea every morning.")
    embedder = get_embedder()

    def unavailable(*args: Any) -> Any:
        raise EmbedderUnavailable("onnxruntime failed to embed 1 texts: out of memory")

    def second_fails(text: str) -> Callable[[], list[float]]:
        return unavailable

    monkeypatch.setattr(embedder, "query_run", unavailable if step == "first" else second_fails)
    results = search(access_for_user(user=alice), SearchRequest(query="What does Marcel drink?"))
    assert results[0].text == "Marcel drinks green tea every morning."
    assert "keyword" in results[0].candidate.legs and "vector" not in results[0].candidate.legs


def test_the_keyword_legs_run_while_the_query_is_embedded(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    remember(alice, "Marcel drinks green tea every morning.")
    access = access_for_user(user=alice)
    embedder = get_embedder()
    keyword_ran = threading.Event()
    seen: dict[str, Any] = {}
    original = embedder.query_run

    def query_run(text: str) -> Callable[[], list[float]]:
        rest = original(text)

        def run() -> list[float]:
            # Waits for the claim keyword leg's statement: it can only come while this embedding is under way if the
            # embedding runs beside the keyword legs (serially this would wait out the timeout and fail below).
            seen["overlapped"] = keyword_ran.wait(timeout=10)
            seen["thread"] = threading.current_thread().name
            return rest()

        return run

    def watch(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        if "ORDER BY score" in sql:
            keyword_ran.set()
        return execute(sql, *args)

    monkeypatch.setattr(embedder, "query_run", query_run)
    with connection.execute_wrapper(watch):
        results = search(access, SearchRequest(query="What does Marcel drink?"))
    assert seen == {"overlapped": True, "thread": seen["thread"]}
    assert seen["thread"] != threading.current_thread().name
    assert results[0].text == "Marcel drinks green tea every morning."
    assert "vector" in results[0].candidate.legs


def test_a_task_card_shows_its_status(api: Any, owner: Any, alice: User) -> None:
    processed(api, owner, TEA_SAMPLES)
    results = search(access_for_user(user=alice), SearchRequest(query="tea samples", limit=20))
    cards = [result.text for result in results if result.type == "node" and result.kind == "Task"]
    assert cards and all(card.startswith("Task: ") and "(pending)" in card for card in cards), cards


def test_the_access_count_is_sent_off_the_request_thread_and_flushed_after_it(alice: User) -> None:
    from memory.recall import bookkeeping

    bookkeeping.flush_access()  # whatever earlier tests left pending
    remember(alice, "Marcel drinks green tea every morning.")
    access = access_for_user(user=alice)
    held = threading.Event()
    process_pool(bookkeeping.SENDER, 1).submit(held.wait, 30)  # the sender busy: the search must not wait for it
    try:
        results = search(access, SearchRequest(query="What does Marcel drink?"))
        assert results[0].type == "claim"
        redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
        assert not redis.exists(bookkeeping.PENDING)  # answered before its access was counted
    finally:
        held.set()
    assert bookkeeping.flush_access() == 1  # a flush waits for what this process queued


def test_a_cold_search_counts_the_words_of_every_corpus_in_one_statement(alice: User) -> None:
    remember(alice, "Marcel drinks green tea every morning.")
    access = access_for_user(user=alice)
    with CaptureQueriesContext(connection) as cold_queries:
        results = search(access, SearchRequest(query="What does Marcel drink in the morning?"))
    counting = [query["sql"] for query in cold_queries.captured_queries if "count(*)" in query["sql"]]
    assert len(counting) == 1  # rows in reach and each word's rows, in claims, chunks and node cards
    assert all(f"'{corpus}'" in counting[0] for corpus in ("claim", "chunk", "node"))
    assert results[0].text == "Marcel drinks green tea every morning."


def test_a_search_reads_the_rows_of_every_corpus_it_shows_in_one_round_trip(api: Any, owner: Any, alice: User) -> None:
    access = tea_for_marcel(api, owner, alice)
    results: list[Any] = []
    trips = round_trips(lambda: results.extend(search(access, SearchRequest(query="tea samples for Marcel", limit=20))))
    assert {"claim", "chunk", "node"} <= {result.type for result in results}
    reads = ["WHERE e.claim_id = ANY(", "FROM memory_claim c JOIN", "FROM memory_chunk c JOIN", "WHERE n.id = ANY("]
    hydrating = [" ".join(trip) for trip in trips if any(read in text for text in trip for read in reads)]
    assert len(hydrating) == 1 and all(read in hydrating[0] for read in reads)  # each corpus's rows, by id
    claim = next(result for result in results if result.type == "claim" and result.text.startswith("Marcel prefers"))
    chunk = next(result for result in results if result.type == "chunk")
    assert chunk.evidence[0]["messageId"] == "m2" and "chat" in chunk.conversation_ids
    assert claim.partition == chunk.partition == "memory:personal"


def test_the_keyword_legs_of_every_corpus_and_window_are_one_statement(api: Any, owner: Any, alice: User) -> None:
    processed(api, owner, TEA_SAMPLES)
    remember(alice, "Marcel prefers green tea samples.")
    access = access_for_user(user=alice)
    asked = SearchRequest(query="Which tea samples did Marcel get in April 2026?", limit=20)
    search(access, asked)  # word statistics cached: only the legs and the rows shown remain
    drained("vocabulary")
    results: list[Any] = []
    trips = round_trips(lambda: results.extend(search(access, asked)))
    assert "tea samples" in results[0].text
    sql = [text for trip in trips for text in trip]
    keyword = [text for text in sql if "ORDER BY score" in text]
    vector = [text for text in sql if "<=>" in text]
    # The whole memory and the month asked about, each in claims, chunks and node cards: one statement a leg.
    assert len(keyword) == 1 and len(vector) == 1
    for tables in (keyword[0], vector[0]):
        assert all(table in tables for table in ("FROM memory_claim c", "FROM memory_chunk c", "FROM memory_node c"))
    assert keyword[0].count("search_vector @@") == 2 * 3 * 2  # candidates and scoring, per corpus and window
    assert vector[0].count("ORDER BY distance") == 3 * 2
    assert len(trips) == 3  # and the rows shown


def test_rows_out_of_reach_count_against_reading_every_row(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    remember(alice, "Marcel drinks green tea every morning.")
    access = access_for_user(user=alice)
    search(access, SearchRequest(query="What does Marcel drink?"))
    drained("vocabulary")
    held = word_statistics.owner_rows_cached(CORPORA, alice.pk)
    assert held is not None
    monkeypatch.setattr(legs, "EXACT_ROWS", sum(held.values()))
    assert legs.searched_exactly(CORPORA, reach_of(alice))
    for number in range(3):  # out of the personal reach, but among the owner's rows that an index range covers
        ClaimFactory.create(owner=alice, scope="reference", statement=f"The manual's step {number}.")
    cache.delete_many(list(word_statistics._owner_keys(CORPORA, alice.pk).values()))  # as a minute later
    search(access, SearchRequest(query="What does Marcel drink?"))
    drained("vocabulary")
    assert not legs.searched_exactly(CORPORA, reach_of(alice))


def counts_owner_rows(statements: list[dict[str, Any]]) -> bool:
    return any(f"LIMIT {word_statistics.OWNER_ROWS}" in query["sql"] for query in statements)


def test_the_owners_rows_are_kept_an_hour_and_counted_anew_after_any_write(transactional_db: None, alice: User) -> None:
    from django.db import transaction

    from memory.recall.caching import VERSIONED_SECONDS
    from memory.services.audit import memory_changed

    remember(alice, "Marcel drinks green tea every morning.")
    access = access_for_user(user=alice)
    search(access, SearchRequest(query="What does Marcel drink?"))
    drained("vocabulary")
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    keys = word_statistics._owner_keys(CORPORA, alice.pk)
    assert all(600 < redis.ttl(cache.make_key(key)) <= VERSIONED_SECONDS for key in keys.values())
    with CaptureQueriesContext(connection) as quiet:
        search(access, SearchRequest(query="What does Marcel drink in the morning?"))
    assert not counts_owner_rows(quiet.captured_queries)
    with transaction.atomic():
        ClaimFactory.create(owner=alice, scope="reference", statement="The manual's first step.")
        memory_changed(alice.pk)  # as every write of the services says
    with CaptureQueriesContext(connection) as written:
        search(access, SearchRequest(query="What does Marcel drink at noon?"))
    assert counts_owner_rows(written.captured_queries)
    drained("vocabulary")  # the counts are kept by recall's thread
    assert word_statistics.owner_rows_cached(CORPORA, alice.pk) == {"claim": 2, "chunk": 0, "node": 0}


@pytest.mark.parametrize("reach", ["small", "large"])
def test_neither_vector_form_finds_another_owners_rows(
    alice: User, bob: User, reach: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if reach == "large":
        through_the_index(monkeypatch)
    remember(bob, "Marcel drinks green tea every morning.")  # the nearest row to the question: bob's
    remember(alice, "The user waters the plants on Sundays.")
    access = access_for_user(user=alice)
    search(access, SearchRequest(query="What does Marcel drink?"))  # alice's rows counted
    drained("vocabulary")
    assert legs.searched_exactly(CORPORA, reach_of(alice)) == (reach == "small")
    found = search(access, SearchRequest(query="What does Marcel drink every morning?", use_keyword=False))
    assert found or reach == "large"  # the index is approximate (see above): only the exact scan must find alice's
    assert all(result.text != "Marcel drinks green tea every morning." for result in found)
    assert not Claim.objects.filter(pk__in=[result.candidate.id for result in found], owner=bob).exists()

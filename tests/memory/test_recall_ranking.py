"""Ranking sanity of /query/search: keyword and vector legs, boosts, windows and what never comes back."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.access import access_for_user
from memory.embeddings import get_embedder
from memory.models import Claim, Evidence, Node, Source, User
from memory.pipeline.runner import run_operation
from memory.recall import legs, word_statistics
from memory.recall import results as results_module
from memory.recall.caching import KEEPER
from memory.recall.corpora import CORPORA
from memory.recall.legs import _candidate_levels, keyword_hits, keyword_hits_within
from memory.recall.search import SearchRequest, search
from memory.recall.terms import query_terms
from memory.recall.threads import drained
from tests.conftest import Api, Persona
from tests.factories import ClaimFactory, NodeFactory
from tests.round_trips import round_trips

pytestmark = pytest.mark.django_db


def remember(owner: User, statement: str, **fields: Any) -> Claim:
    """A claim with a vector of the active model, as the pipeline stores one."""
    embedder = get_embedder()
    vector = embedder.embed_documents([statement])[0]
    return ClaimFactory.create(
        owner=owner, statement=statement, embedding=vector, embedding_model=embedder.model_id, **fields
    )


def found(api: Api, persona: Persona, query: str, **options: Any) -> list[dict[str, Any]]:
    response = api.post("/query/search", persona, {"query": query, **options})
    assert response.status_code == 200, response.content
    return list(response.json()["searchResults"])


def claim_texts(results: list[dict[str, Any]]) -> list[str]:
    return [result["text"] for result in results if result["type"] == "claim"]


def say(api: Api, persona: Persona, conversation: str, text: str) -> None:
    body = {"conversation": {"id": conversation, "messages": [
        {"id": "m1", "role": "user", "content": text, "timestamp": "2026-04-22T09:00:00Z"},
    ]}}  # fmt: skip
    run_operation(api.post("/ingest/conversation", persona, body).json()["operationId"])


def test_an_exact_keyword_match_ranks_first(api: Api, owner: Persona, alice: User) -> None:
    for statement in [
        "Anna's birthday party is next Saturday.",
        "Prefers chocolate cake on birthdays.",
        "Marcel's birthday is on 12 May.",
        "Celebrates birthdays with a family dinner.",
    ]:
        remember(alice, statement)
    first = found(api, owner, "When is Marcel's birthday?")[0]
    assert first["text"] == "Marcel's birthday is on 12 May."
    assert first["legs"]["keyword"]["rank"] == 1


@pytest.mark.parametrize(
    ("wanted", "near", "query"),
    [
        ("Ticket ABC-1234 is about the invoice export.", "Ticket ABC-1235 is about the login bug.", "ABC-1234"),
        ("The workshop is in room 4.12.", "The retro is in room 4.21.", "4.12"),
        ("Send invoices to billing@acme.test.", "Send contracts to legal@acme.test.", "billing@acme.test"),
    ],
    ids=["ticket", "room", "address"],
)
def test_an_identifier_is_told_apart_from_a_near_one_by_keyword(
    api: Api, owner: Persona, alice: User, wanted: str, near: str, query: str
) -> None:
    # No vectors: only the keyword leg can rank these, as it must for names and numbers.
    ClaimFactory.create(owner=alice, statement=near)
    ClaimFactory.create(owner=alice, statement=wanted)
    results = [result for result in found(api, owner, query) if result["type"] == "claim"]
    assert [result["text"] for result in results][:1] == [wanted]
    best = results[0]["legs"]["keyword"]["score"]
    assert all(result["legs"]["keyword"]["score"] < best for result in results[1:])


def test_a_paraphrase_without_shared_words_is_found_through_the_vector_leg(
    api: Api, owner: Persona, alice: User
) -> None:
    for statement in ["Prefers morning meetings.", "Works at Globex.", "Allergic to peanuts.", "Lives in Utrecht."]:
        remember(alice, statement)
    # "nuts" and "peanuts" share no word or stem: only the meaning connects them.
    first = found(api, owner, "Which nuts should I avoid?")[0]
    assert first["text"] == "Allergic to peanuts."
    assert list(first["legs"]) == ["vector"]
    assert first["legs"]["vector"]["rank"] == 1


def test_recency_breaks_a_tie_between_two_equal_matches(api: Api, owner: Persona, alice: User) -> None:
    now = timezone.now()
    # Ids chosen so that the older claim wins the ordering by id when relevance ties.
    older = remember(alice, "Team standup starts at 9:30.", id="claim_0a", stated_at=now - timedelta(days=300))
    newer = remember(alice, "Team standup starts at 9:30.", id="claim_0b", stated_at=now - timedelta(days=2))
    first, second = found(api, owner, "standup")[:2]
    assert [first["id"], second["id"]] == [newer.pk, older.pk]
    assert first["legs"]["keyword"]["score"] == second["legs"]["keyword"]["score"]
    assert (first["legs"]["keyword"]["rank"], second["legs"]["keyword"]["rank"]) == (2, 1)
    assert first["boosts"]["recency"] > second["boosts"]["recency"]


def test_a_pinned_claim_outranks_an_equal_unpinned_one(api: Api, owner: Persona, alice: User) -> None:
    stated = timezone.now() - timedelta(days=10)
    plain = remember(alice, "Always book aisle seats.", id="claim_0a", stated_at=stated)
    pinned = remember(alice, "Always book aisle seats.", id="claim_0b", stated_at=stated, pinned=True)
    first, second = found(api, owner, "aisle seats")[:2]
    assert [first["id"], second["id"]] == [pinned.pk, plain.pk]
    assert (first["pinned"], second["pinned"]) == (True, False)
    assert first["boosts"]["pinned"] == 0.1
    assert "pinned" not in second["boosts"]


def test_the_named_conversation_lifts_its_memories(api: Api, owner: Persona) -> None:
    say(api, owner, "chat-a", "I like strong coffee.")
    say(api, owner, "chat-b", "I love iced coffee.")

    def ranking(conversation: str) -> list[tuple[str, float]]:
        results = found(api, owner, "coffee", conversationId=conversation)
        return [(result["text"], result["boosts"].get("conversation", 0)) for result in results]

    assert ranking("chat-a") == [("Likes strong coffee.", 0.1), ("Loves iced coffee.", 0)]
    assert ranking("chat-b") == [("Loves iced coffee.", 0.1), ("Likes strong coffee.", 0)]


def test_excluded_node_types_drop_the_claims_about_such_nodes(api: Api, owner: Persona, alice: User) -> None:
    marcel = NodeFactory.create(owner=alice, type="Person", label="Marcel")
    groceries = NodeFactory.create(owner=alice, type="Task", label="Groceries")
    remember(alice, "Marcel drinks green tea.", subject=marcel)
    remember(alice, "Buy green tea.", subject=groceries)
    remember(alice, "Prefers green tea in the afternoon.")

    def about_tea(excluded: list[str]) -> list[str]:
        return sorted(claim_texts(found(api, owner, "green tea", excludeNodeTypes=excluded)))

    assert about_tea([]) == ["Buy green tea.", "Marcel drinks green tea.", "Prefers green tea in the afternoon."]
    assert about_tea(["Person"]) == ["Buy green tea.", "Prefers green tea in the afternoon."]
    assert about_tea(["Person", "Task"]) == ["Prefers green tea in the afternoon."]


def test_since_and_recent_only_keep_memories_of_the_window(api: Api, owner: Persona, alice: User) -> None:
    now = timezone.now()
    remember(alice, "Cycled to the harbour.", stated_at=now - timedelta(days=30))
    remember(alice, "Cycled to the dunes.", stated_at=now - timedelta(days=3))
    remember(alice, "Cycled to the office.")  # no stated_at: its time is when it was recorded, now

    def cycled(**window: Any) -> list[str]:
        return sorted(claim_texts(found(api, owner, "cycled", **window)))

    everything = ["Cycled to the dunes.", "Cycled to the harbour.", "Cycled to the office."]
    assert cycled() == everything
    assert cycled(since=(now - timedelta(days=60)).isoformat()) == everything
    assert cycled(recentOnly=True) == ["Cycled to the dunes.", "Cycled to the office."]
    assert cycled(since=(now - timedelta(days=10)).isoformat()) == ["Cycled to the dunes.", "Cycled to the office."]
    # Both given: the later start wins.
    assert cycled(since=(now - timedelta(days=1)).isoformat(), recentOnly=True) == ["Cycled to the office."]


def test_vectors_of_another_model_are_never_compared(api: Api, owner: Persona, alice: User) -> None:
    embedder = get_embedder()
    remember(alice, "Allergic to peanuts.")
    # A vector identical to the query's own: if it were ever compared it would be the best match there is.
    ClaimFactory.create(
        owner=alice, statement="Allergic to shellfish.", embedding_model="another-model@1",
        embedding=embedder.embed_query("Which nuts should I avoid?"),
    )  # fmt: skip
    ClaimFactory.create(
        owner=alice, statement="Allergic to shellfish and squid.", embedding_model="embeddinggemma",
        embedding=[0.03] * 768,
    )  # fmt: skip
    assert claim_texts(found(api, owner, "Which nuts should I avoid?")) == ["Allergic to peanuts."]
    by_keyword = [r for r in found(api, owner, "shellfish") if r["text"].startswith("Allergic to shellfish")]
    assert [(r["text"], list(r["legs"])) for r in by_keyword] == [
        ("Allergic to shellfish.", ["keyword"]),
        ("Allergic to shellfish and squid.", ["keyword"]),
    ]


def test_claims_that_are_no_longer_current_never_come_back(api: Api, owner: Persona, alice: User) -> None:
    for status in ["superseded", "retracted", "expired", "quarantined", "suggested"]:
        remember(alice, f"Lives in Utrecht ({status}).", status=status)
    remember(alice, "Lives in Utrecht (past its expiry).", expires_at=timezone.now() - timedelta(hours=1))
    remember(alice, "Lives in Utrecht (current).", expires_at=timezone.now() + timedelta(days=1))
    assert claim_texts(found(api, owner, "Where do I live? Utrecht")) == ["Lives in Utrecht (current)."]
    recalled = api.post("/recall", owner, {"query": "Utrecht"}).json()["memories"]
    assert claim_texts(recalled) == ["Lives in Utrecht (current)."]


def test_every_result_carries_legs_evidence_status_and_pinned(api: Api, owner: Persona) -> None:
    say(api, owner, "chat", "I prefer window seats on long flights.")
    message = Source.objects.get(kind="message", message_id="m1")
    results = found(api, owner, "window seats")
    first = results[0]
    assert (first["type"], first["text"], first["status"], first["pinned"]) == (
        "claim", "Prefers window seats on long flights.", "active", False,
    )  # fmt: skip
    assert first["evidence"] == [
        {
            "sourceId": message.pk,
            "excerpt": "I prefer window seats on long flights.",
            "messageId": "m1",
            "authoredAt": "2026-04-22T09:00:00Z",
        }
    ]
    # The message the claim was drawn from is folded into it rather than listed again.
    assert {"keyword", "vector", "evidence.keyword", "evidence.vector"} <= set(first["legs"])
    assert [r for r in results if r["type"] == "chunk" and r["evidence"][0]["sourceId"] == message.pk] == []
    for result in results:
        assert result["legs"], result
        assert {"status", "pinned", "evidence", "legs"} <= set(result), result
        if result["type"] in ("claim", "chunk"):
            assert set(result["evidence"][0]) == {"sourceId", "excerpt", "messageId", "authoredAt"}


def test_a_search_costs_the_same_queries_for_2_or_20_matches(api: Api, owner: Persona, alice: User) -> None:
    # A processed conversation puts a chunk, task claims and person and task cards in reach as well.
    say(api, owner, "chat", "I'll send the tea samples to Marcel by Friday.")
    message = Source.objects.get(kind="message")
    marcel = Node.objects.get(type="Person", label="Marcel")
    access = access_for_user(user=alice)

    def add_claims(count: int) -> None:
        for _ in range(count):
            claim = remember(alice, f"Marcel likes tea blend {Claim.objects.count()}.", subject=marcel)
            Evidence.objects.create(owner=alice, claim=claim, source=message, excerpt="Tea.", message_id="m1")

    def search_cost() -> tuple[list[str], int]:
        search(access, SearchRequest(query="tea", limit=50))
        drained(KEEPER)  # what it counted and read is kept by recall's thread: cached from here on
        results: list[Any] = []
        trips = round_trips(lambda: results.extend(search(access, SearchRequest(query="tea", limit=50))))
        return sorted({result.type for result in results}), len(trips)

    add_claims(2)
    few = search_cost()
    add_claims(18)
    many = search_cost()
    assert Claim.objects.filter(statement__startswith="Marcel likes tea").count() == 20
    # The keyword legs of every corpus in one statement ("tea" is cut into words without one; word statistics, the
    # newest source in reach and the speakers named cached; few rows, so one level each), the vector legs of every
    # corpus and their settings in one round trip, then the rows shown, in one round trip: claims with their
    # evidence, chunks (the message's is folded into the task claims drawn from it) and node cards (with a task's
    # status and the newest thing said about each).
    assert few == many == (["claim", "node"], 3)


def test_candidate_levels_ask_for_several_words_only_past_the_budget() -> None:
    few = {"lena": 40, "petrov": 30, "book": 90}
    assert _candidate_levels(list(few), few) == [(["petrov", "lena", "book"], 1)]
    many = {"lena": 1_500, "petrov": 900, "book": 4_000, "recommend": 3_000}
    assert _candidate_levels(list(many), many) == [
        (["petrov", "lena", "recommend", "book"], 3),
        (["petrov", "lena", "recommend", "book"], 2),
        (["petrov"], 1),  # 900 + 1,500 would pass the budget of 2,000
    ]
    assert _candidate_levels(["book"], {"book": 4_000}) == [(["book"], 1)]


def past_the_budget(owner: User, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claims of which many hold some words of "Which book did Lena Petrov recommend?" and one holds them all, with
    the budget in rows lowered so this handful stands for a memory of thousands."""
    monkeypatch.setattr(legs, "CANDIDATE_BUDGET", 3)
    monkeypatch.setattr(legs, "SELECTIVE_SHARE", 1.0)  # every query word may pick candidates
    for n in range(6):
        ClaimFactory.create(owner=owner, statement=f"Lena Petrov mentioned topic {n}.")
        ClaimFactory.create(owner=owner, statement=f"Someone recommended book {n}.")
    ClaimFactory.create(owner=owner, statement="Lena Petrov recommended the book Dune.")
    ClaimFactory.create(owner=owner, statement="Filler that holds no query word.")


def test_past_the_budget_rows_holding_more_query_words_are_found_first(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    past_the_budget(alice, monkeypatch)
    access = access_for_user(user=alice)
    asked = SearchRequest(query="Which book did Lena Petrov recommend?", limit=20, use_vector=False)
    with CaptureQueriesContext(connection) as captured:
        results = search(access, asked)
    assert results[0].text == "Lena Petrov recommended the book Dune."
    # The three-word level held one row, too few for the depth asked, so the lower levels filled the answer,
    # each scoring no more rows than the budget (12 rows hold some of the words).
    assert 1 < len(results) <= 1 + 2 * 3
    assert any(result.text.startswith("Lena Petrov mentioned topic") for result in results)
    levels = [query["sql"] for query in captured.captured_queries if "ORDER BY score" in query["sql"]]
    assert len([sql for sql in levels if "memory_claim" in sql]) == 3


def test_every_corpus_and_window_finds_in_the_one_statement_what_it_finds_alone(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claims need several candidate levels; the node card is done after one, and chunks hold no word.
    past_the_budget(alice, monkeypatch)
    NodeFactory.create(owner=alice, type="Person", label="Lena Petrov")
    access = access_for_user(user=alice)
    params = {"owner": alice.pk, "partitions": [p.pk for p in access.read_partitions], "scope": "personal",
              "excluded": []}  # fmt: skip
    terms = query_terms("Which book did Lena Petrov recommend?")
    spans = [(None, None), (datetime(2020, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))]
    with CaptureQueriesContext(connection) as captured:
        together = keyword_hits_within(CORPORA, terms, params, spans, 8)
    alone = [
        [hit for corpus in CORPORA for hit in keyword_hits(corpus, terms, params, since, 8, until)]
        for since, until in spans
    ]
    assert together == alone
    assert {hit.corpus for hit in together[0]} == {"claim", "node"} and together[0] == together[1]
    levels = [query["sql"] for query in captured.captured_queries if "ORDER BY score" in query["sql"]]
    # Claims went down three levels in both windows; node cards were done after the first, chunks hold no word.
    assert len(levels) == 3
    assert "FROM memory_node c" in levels[0] and "FROM memory_chunk c" not in levels[0]
    assert all("FROM memory_node c" not in sql and sql.count("FROM memory_claim c") == 2 for sql in levels[1:])


def test_when_every_query_word_is_common_rows_holding_several_come_first(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(legs, "CANDIDATE_BUDGET", 3)
    monkeypatch.setattr(legs, "SELECTIVE_SHARE", 0.0)  # no word tells rows apart: every word is common
    monkeypatch.setattr(legs, "MIN_SELECTIVE_ROWS", 0)
    for n in range(4):
        ClaimFactory.create(owner=alice, statement=f"Moving boxes, batch {n}.")
        ClaimFactory.create(owner=alice, statement=f"The cost of item {n}.")
    ClaimFactory.create(owner=alice, statement="Moving costs about 900 euros.")
    asked = SearchRequest(query="how much does the move cost?", limit=1, use_vector=False)
    with CaptureQueriesContext(connection) as captured:
        results = search(access_for_user(user=alice), asked)
    assert [result.text for result in results] == ["Moving costs about 900 euros."]
    levels = [query["sql"] for query in captured.captured_queries if "ORDER BY score" in query["sql"]]
    # Claims: rows holding both words (one row, fewer than the depth asked), then the rarest word alone.
    assert len([sql for sql in levels if "memory_claim" in sql]) == 2


def rows_read(sql: str, relation: str, params: Any = None) -> float:
    """How many rows a captured statement read from `relation`, by EXPLAIN (ANALYZE): work, not time."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan

    def walk(node: dict[str, Any]) -> float:
        own = node["Actual Rows"] * node["Actual Loops"] if node.get("Relation Name") == relation else 0.0
        return own + sum(walk(child) for child in node.get("Plans", []))

    return walk(plan[0]["Plan"])


def test_a_keyword_level_scores_at_most_the_budget_however_many_rows_match(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Thirty rows hold both words: a million-claim memory where a level still holds 100,000 rows, in small.
    monkeypatch.setattr(legs, "CANDIDATE_BUDGET", 5)
    for n in range(30):
        ClaimFactory.create(owner=alice, statement=f"The harbour festival, day {n}.")
    asked = SearchRequest(query="harbour festival", limit=3, use_vector=False)
    with CaptureQueriesContext(connection) as captured:
        results = search(access_for_user(user=alice), asked)
    assert len(results) == 3
    levels = [query["sql"] for query in captured.captured_queries if "ORDER BY score" in query["sql"]]
    claim_levels = [sql for sql in levels if "FROM memory_claim" in sql]
    assert claim_levels
    assert max(rows_read(sql, "memory_claim") for sql in claim_levels) <= 5


@override_settings(SEARCH_CANDIDATES=5)
def test_a_word_counted_to_the_cap_leaves_the_candidates_to_a_rarer_one(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Word counts stop at DF_CAP: a word that reached it is common, however few rows are in reach. Otherwise,
    # at a million claims every word looks alike and rows holding two common words crowd out the rare one.
    monkeypatch.setattr(legs, "CANDIDATE_BUDGET", 5)
    monkeypatch.setattr(word_statistics, "DF_CAP", 10)
    for n in range(30):
        ClaimFactory.create(owner=alice, statement=f"The harbour festival, day {n}.")
    for n in range(3):
        ClaimFactory.create(owner=alice, statement=f"A zeppelin over the harbour, sighting {n}.")
    asked = SearchRequest(query="harbour festival zeppelin", limit=1, use_vector=False)
    results = search(access_for_user(user=alice), asked)
    assert [result.text for result in results] in [[f"A zeppelin over the harbour, sighting {n}."] for n in range(3)]


def test_a_cards_time_reads_the_evidence_of_its_latest_claims_only(
    api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(results_module, "NEWEST_CLAIMS", 3)
    say(api, owner, "chat", "The harbour renovation starts in May.")
    message = Source.objects.get(kind="message")
    card = NodeFactory.create(owner=alice, type="Project", label="Harbour renovation")
    start = timezone.now() - timedelta(days=400)
    for n in range(10):  # stated one day apart, each said again the day it was stated
        claim = ClaimFactory.create(owner=alice, subject=card, stated_at=start + timedelta(days=n))
        Evidence.objects.create(
            owner=alice, claim=claim, source=message, excerpt="May.", authored_at=start + timedelta(days=n)
        )
    sent: list[tuple[str, Any]] = []

    def keep(execute: Any, sql: str, params: Any, *args: Any) -> Any:
        sent.append((sql, params))  # a prepared statement: its text and values apart
        return execute(sql, params, *args)

    with connection.execute_wrapper(keep):
        cards = results_module.node_results([card.pk])
    assert cards[card.pk].time == start + timedelta(days=9)
    newest = [(sql, params) for sql, params in sent if "memory_evidence" in sql]
    assert len(newest) == 1
    sql, params = newest[0]
    assert rows_read(sql, "memory_evidence", params) <= 3

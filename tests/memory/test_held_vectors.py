"""A small reach's vectors and words held in the process (memory.recall.held_vectors): ranked as the exact vector
statement ranks them, scored as the keyword statement scores them, and never read once the memory they were read from
has changed, an erasure came, or Redis lost its keys."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.access import access_for_user
from memory.embeddings import get_embedder
from memory.models import Chunk, Claim, Evidence, Node, Partition, User
from memory.recall import held_vectors, held_words, legs, word_statistics
from memory.recall import results as results_module
from memory.recall import search as search_module
from memory.recall.caching import ERASING_MARK, dropped_key
from memory.recall.corpora import CORPORA, Span
from memory.recall.fusion import Candidate
from memory.recall.legs import Hit, vector_hits_within
from memory.recall.results import SearchResult, hydrated
from memory.recall.search import SearchRequest, search
from memory.recall.terms import query_terms
from memory.recall.threads import drained
from memory.recall.word_statistics import statistics_counted
from memory.services.audit import memory_changed, memory_version_key
from memory.services.claim_erasure import claims_erase
from memory.services.embeddings import vectors_write
from tests.conftest import Api, Persona
from tests.factories import ClaimFactory, NodeFactory
from tests.memory.test_recall_api import say
from tests.memory.test_recall_fork import exit_code
from tests.memory.test_recall_word_statistics import cached_counts, reach_of

pytestmark = pytest.mark.django_db(transaction=True)  # the copy is read by a thread: the rows must be committed

QUESTIONS = ["Where did Marcel buy tea?", "What does the user paint?", "When is the dentist?", "Who plays chess?"]
SPANS: list[list[Span]] = [
    [(None, None)],
    [(None, None), (datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 4, 23, tzinfo=UTC))],
    [(datetime(2026, 4, 22, 10, 0, 2, tzinfo=UTC), None)],  # since: from this turn on
    [(None, datetime(2026, 4, 22, 10, 0, 2, tzinfo=UTC))],  # until: the turns before it
]


@pytest.fixture(autouse=True)
def _no_copies(transactional_db: None) -> Iterator[None]:
    held_vectors.forget_all()
    yield
    drained(held_vectors.HOLDING)  # before the tables are emptied


def remember(owner: User, statement: str, **fields: Any) -> Claim:
    """A claim with its vector, and the owner's memory version moved on as any audited write moves it."""
    embedder = get_embedder()
    claim = ClaimFactory.create(
        owner=owner, statement=statement, embedding=embedder.embed_query(statement),
        embedding_model=embedder.model_id, **fields,
    )  # fmt: skip
    memory_changed(owner.pk)  # autocommit: at once
    return claim


def a_small_memory(api: Api, owner: Persona, alice: User) -> None:
    say(
        api, owner,
        "Marcel bought green tea in Lisbon.", "I am painting the garage door this weekend.",
        "The dentist appointment moved to Thursday.", "Ingrid and I play chess on Mondays.",
    )  # fmt: skip
    marcel = NodeFactory.create(owner=alice, type="Person", label="Marcel", summary="A tea importer in Lisbon.")
    embedder = get_embedder()
    vectors_write(Node, [marcel], [embedder.embed_query("Marcel, a tea importer")], embedder.model_id)
    tea = remember(alice, "Marcel prefers green tea.", stated_at=datetime(2026, 3, 2, tzinfo=UTC), subject=marcel)
    chunk = Chunk.objects.filter(owner=alice, text__contains="green tea").get()
    Evidence.objects.create(owner=alice, claim=tea, source_id=chunk.source_id, excerpt=chunk.text, message_id="m1")
    remember(alice, "The user paints landscapes in oil.")


def nearest(alice: User, question: str, spans: list[Span], **options: Any) -> list[list[Hit]] | None:
    embedder = get_embedder()
    vector = embedder.embed_query(question)
    return held_vectors.nearest_within(CORPORA, vector, embedder.model_id, reach_of(alice), spans, 40, **options)


def held(alice: User) -> None:
    """The copy of alice's reach read, as the first search of it hands it on."""
    assert nearest(alice, "anything", [(None, None)]) is None
    drained(held_vectors.HOLDING)
    assert nearest(alice, "anything", [(None, None)]) is not None


def statement_finds(alice: User, question: str, spans: list[Span]) -> list[list[Hit]]:
    embedder = get_embedder()
    vector = embedder.embed_query(question)
    return vector_hits_within(CORPORA, vector, embedder.model_id, reach_of(alice), spans, 40, exact=True)


def ranked(found: list[list[Hit]]) -> list[list[tuple[str, str]]]:
    return [[(hit.corpus, hit.id) for hit in hits] for hits in found]


def test_a_held_copy_ranks_every_corpus_and_window_as_the_exact_statement_does(
    api: Api, owner: Persona, alice: User
) -> None:
    a_small_memory(api, owner, alice)
    held(alice)
    found = [0] * len(SPANS)
    for question in QUESTIONS:
        for number, spans in enumerate(SPANS):
            copy, statement = nearest(alice, question, spans), statement_finds(alice, question, spans)
            assert copy is not None
            assert ranked(copy) == ranked(statement), (question, spans)
            pairs = zip(copy, statement, strict=True)
            scores = [(a.score, b.score) for hits, others in pairs for a, b in zip(hits, others, strict=True)]
            assert all(abs(a - b) < 1e-5 for a, b in scores)
            found[number] += len(statement[-1])
    assert all(0 < within < found[0] for within in found[1:])  # each window keeps some rows and leaves some out


def test_a_held_copy_leaves_out_the_node_types_a_search_leaves_out(api: Api, owner: Persona, alice: User) -> None:
    a_small_memory(api, owner, alice)
    embedder = get_embedder()
    marcel = NodeFactory.create(owner=alice, type="Person", label="Marcel")
    NodeFactory.create(owner=alice, type="Place", label="Lisbon")
    for node in Node.objects.filter(owner=alice):
        vectors_write(Node, [node], [embedder.embed_query(node.label)], embedder.model_id)  # moves the version on
    remember(alice, "Marcel is a tea importer.", subject=marcel)
    vector = embedder.embed_query("Who is Marcel?")
    nodes = {}
    for excluded in ([], ["Person"], ["Person", "Place"]):
        reach = reach_of(alice) | {"excluded": excluded}
        assert held_vectors.nearest_within(CORPORA, vector, embedder.model_id, reach, [(None, None)], 40) is None
        drained(held_vectors.HOLDING)
        copy = held_vectors.nearest_within(CORPORA, vector, embedder.model_id, reach, [(None, None)], 40)
        statement = vector_hits_within(CORPORA, vector, embedder.model_id, reach, [(None, None)], 40, exact=True)
        assert copy is not None and ranked(copy) == ranked(statement), excluded
        nodes[len(excluded)] = sum(corpus == "node" for corpus, _ in ranked(copy)[0])
    assert nodes[0] > nodes[1] > nodes[2]  # the people among the node cards left out, then the places too
    assert {hit.corpus for hit in statement_finds(alice, "Marcel tea", [(None, None)])[0]} >= {"claim", "chunk"}


def test_a_search_of_a_held_reach_answers_what_it_answers_without_the_copy(
    api: Api, owner: Persona, alice: User, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_small_memory(api, owner, alice)
    access = access_for_user(user=alice)
    search(access, SearchRequest(query="tea"))  # the owner's rows counted: the reach is searched exactly
    drained("vocabulary")
    search(access, SearchRequest(query="tea"))  # ... and hands its copy on
    drained(held_vectors.HOLDING)
    assert nearest(alice, "tea", [(None, None)]) is not None
    answers, sent = {}, {}
    for on in (True, False):
        settings.SEARCH_HELD_VECTORS = on
        with monkeypatch.context() as patched, CaptureQueriesContext(connection) as statements:
            if on:  # the statement is not sent: the copy answered
                patched.setattr(search_module, "vector_hits_within", statement_not_sent)
            answers[on] = [
                [shown(r) for r in search(access, SearchRequest(query=q, conversation_id="chat"))] for q in QUESTIONS
            ]
        sent[on] = [
            sum(all(text in statement["sql"] for text in texts) for statement in statements.captured_queries)
            for texts in (["ts_rank"], ["FROM memory_chunk c JOIN memory_partition", "c.id = ANY"], ["c.id = ANY"])
        ]  # the keyword leg; the chunks' rows read by id; any result's
        # anything else: a word's query is asked once per process (held_words.word_queries)
        sent[on].append(sum(not query["sql"].startswith("SELECT w.word, (") for query in statements.captured_queries))
    assert answers[True] == answers[False]  # the same results, each with the same text, evidence, time, partition
    assert {"chunk", "claim", "node"} <= {result["type"] for answer in answers[True] for result in answer}
    assert any(result["boosts"].get("conversation") for answer in answers[True] for result in answer)
    assert any(result["evidence"] for answer in answers[True] for result in answer if result["type"] == "claim")
    assert sent[True] == [0, 0, 0, 0]  # nothing but words' queries, while the copy is held
    assert sent[False][0] == sent[False][1] == len(QUESTIONS) < sent[False][2]  # without it: chunks, and claims too
    assert all(answers[True])
    settings.SEARCH_HELD_VECTORS = False
    assert nearest(alice, "tea", [(None, None)]) is None  # switched off: never read


def keyword_leg(alice: User, question: str, spans: list[Span], limit: int = 40, **options: Any) -> list[list[Hit]]:
    """The keyword leg from the copy (`held=True`) or its statement."""
    terms, reach = query_terms(question), reach_of(alice)
    if not options.pop("held"):
        return legs.keyword_hits_within(CORPORA, terms, reach, spans, limit)
    scorer = held_vectors.keyword_scorer(CORPORA, terms, reach, **options)
    assert scorer is not None
    return legs.keyword_hits_within(CORPORA, terms, reach, spans, limit, held=scorer)


def test_a_held_copy_scores_the_keyword_leg_to_the_bit_as_its_statement_does(
    api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_small_memory(api, owner, alice)
    unembedded = ClaimFactory.create(owner=alice, statement="Marcel drinks tea with Ingrid on Mondays.")  # no vector
    remember(alice, "Porto.")  # one rare word in a short row: it outscores rows holding two common words
    held(alice)
    questions = [*QUESTIONS, "Marcel tea Porto", "Ingrid chess Mondays tea", "painting the garage door"]
    levels = legs._candidate_levels

    def two_then_one(words: list[str], df: dict[str, int]) -> list[tuple[list[str], int]]:
        return ([(words, 2)] if len(words) > 1 else []) + levels(words, df)

    found = []
    for limit in (40, 2):
        if limit == 2:  # candidates must hold two of the words first, and a level that found two ends the leg
            monkeypatch.setattr(legs, "_candidate_levels", two_then_one)
        for question in questions:
            for spans in SPANS:
                copy = keyword_leg(alice, question, spans, limit, held=True)
                statement = keyword_leg(alice, question, spans, limit, held=False)
                assert copy == statement, (question, spans, limit)  # rows, order and scores: the same floats
                found.append(len(statement[0]))
    assert min(found) == 0 and max(found) >= 4
    assert ("claim", unembedded.id) in ranked(keyword_leg(alice, "Marcel Ingrid Mondays", [(None, None)], held=True))[0]


def test_a_held_copy_counts_new_words_in_reach_as_their_statement_counts_them(
    api: Api, owner: Persona, alice: User
) -> None:
    """Word statistics count every row in reach, also those a search leaves out (a lapsed claim, a claim about a
    node type left out): counted from the copy, the same N and df, and no count is sent."""
    a_small_memory(api, owner, alice)
    lapsed = remember(alice, "The tea voucher lapsed.", expires_at=timezone.now() - timedelta(days=1))
    importer = NodeFactory.create(owner=alice, type="Person", label="Ingrid")
    roasting = remember(alice, "Ingrid roasts barley in Porto.", subject=importer)
    words = query_terms("voucher roasting barley painted tea zebra chess the")
    for excluded in ([], ["Person"]):
        reach = reach_of(alice) | {"excluded": excluded}
        held_vectors.nearest_within(
            CORPORA, get_embedder().embed_query("tea"), get_embedder().model_id, reach, [(None, None)], 40
        )
        drained(held_vectors.HOLDING)
        forget_counts(alice)
        counted = statistics_counted(CORPORA, words, reach)
        forget_counts(alice)
        scorer = held_vectors.keyword_scorer(CORPORA, words, reach)
        assert scorer is not None
        with CaptureQueriesContext(connection) as statements:
            assert statistics_counted(CORPORA, words, reach, held=scorer.counted) == counted, excluded
        assert not [sent for sent in statements.captured_queries if "count(*)" in sent["sql"]]
        assert counted["claim"]["voucher"] == counted["claim"]["barley"] == 1  # in reach whatever a search leaves out
        assert counted["chunk"]["painted"] >= 1 and counted["chunk"]["zebra"] == 0  # "painting", by its stem
        vector = get_embedder().embed_query("the tea voucher")
        copy = held_vectors.nearest_within(CORPORA, vector, get_embedder().model_id, reach, [(None, None)], 40)
        statement = vector_hits_within(CORPORA, vector, get_embedder().model_id, reach, [(None, None)], 40, exact=True)
        assert copy is not None and ranked(copy) == ranked(statement)
        assert ("claim", lapsed.id) not in ranked(copy)[0]
        asked = query_terms("voucher barley Ingrid tea")  # and the keyword leg leaves out what a search leaves out
        scorer = held_vectors.keyword_scorer(CORPORA, asked, reach)
        leg = legs.keyword_hits_within(CORPORA, asked, reach, [(None, None)], 40, held=scorer)
        assert leg == legs.keyword_hits_within(CORPORA, asked, reach, [(None, None)], 40)
        assert ("claim", lapsed.id) not in ranked(leg)[0]
        assert (("claim", roasting.id) in ranked(leg)[0]) == (not excluded)
    forget_counts(alice)
    with CaptureQueriesContext(connection) as statements:  # a search's words new to the reach: counted from the copy
        assert search(access_for_user(user=alice), SearchRequest(query="Which barley did the voucher buy?"))
    assert not [sent for sent in statements.captured_queries if "count(*)" in sent["sql"] or "ts_rank" in sent["sql"]]
    drained(word_statistics.VOCABULARY)
    assert cached_counts(alice)  # and kept, as counted


def forget_counts(user: User) -> None:
    """Every word count of `user`'s cached in Redis gone (the memory version and the owner's rows kept: the copy stays
    current, the reach is searched exactly)."""
    drained(word_statistics.VOCABULARY)  # a vocabulary counted meanwhile would keep them again
    if counts := cached_counts(user):
        cache._cache.get_client(write=True).delete(*counts)  # type: ignore[attr-defined]
    assert not cached_counts(user)


def test_a_held_result_is_shown_from_the_copy_and_one_it_does_not_hold_is_read(
    api: Api, owner: Persona, alice: User
) -> None:
    a_small_memory(api, owner, alice)
    candidates = [
        Candidate(corpus, row_id)
        for corpus, model in (("chunk", Chunk), ("claim", Claim), ("node", Node))
        for row_id in model.objects.filter(owner=alice).values_list("id", flat=True)
    ]
    with CaptureQueriesContext(connection) as statements:
        read = hydrated(candidates, {})  # none held: written after the copy was read
    assert len(read) == len(candidates) and statements.captured_queries
    ids: dict[str, list[str]] = {}
    for candidate in candidates:
        ids.setdefault(candidate.corpus, []).append(candidate.id)
    rows = results_module.rows_held(ids | {"claim": [*ids["claim"], "gone"]})
    assert "gone" not in rows["claim"]  # a row gone is not held
    with CaptureQueriesContext(connection) as statements:
        held_read = hydrated(candidates, rows)
    assert not statements.captured_queries
    assert [shown(result) for result in held_read] == [shown(result) for result in read]
    assert [result.candidate for result in read] == candidates  # in the candidates' order, read or held
    assert any(result.evidence for result in held_read if result.type == "claim")
    chunk = candidates[0].id
    rows["chunk"][chunk][0][0] = rows["chunk"][chunk][0][0] | {"text": "as the copy holds it"}
    with CaptureQueriesContext(connection) as statements:
        (shown_held,) = hydrated([Candidate("chunk", chunk)], rows)
    assert shown_held.text.endswith("as the copy holds it") and not statements.captured_queries


def test_a_partition_renamed_sets_the_copy_aside_and_its_chunks_show_the_new_key(
    api: Api, owner: Persona, alice: User
) -> None:
    a_small_memory(api, owner, alice)
    held(alice)
    reach = reach_of(alice)
    version = cache.get(memory_version_key(alice.pk))
    partition = Partition.objects.get(pk=reach["partitions"][0])
    partition.key = f"{partition.key}-renamed"
    partition.save()  # as the admin saves it
    assert cache.get(memory_version_key(alice.pk)) != version
    assert held_vectors.results_held(CORPORA, reach) is None  # set aside: its results show the old key
    embedder = get_embedder()
    vector = embedder.embed_query("tea")
    assert held_vectors.nearest_within(CORPORA, vector, embedder.model_id, reach, [(None, None)], 40) is None
    drained(held_vectors.HOLDING)
    results = held_vectors.results_held(CORPORA, reach)
    assert results is not None and results["chunk"] and results["claim"] and results["node"]
    keys = {parts[0][0]["partition__key"] for held in results.values() for parts in held.values()}
    assert keys == {partition.key}


@pytest.mark.parametrize("failing", ["a word it cannot score", "the copy's scoring"])
def test_the_keyword_statement_runs_where_the_copy_cannot_score_the_words(
    api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    a_small_memory(api, owner, alice)
    held(alice)
    statement = keyword_leg(alice, "Marcel tea", [(None, None)], held=False)
    if failing == "a word it cannot score":
        held_words.word_queries(["marcel"])
        monkeypatch.setitem(held_words._queries, "marcel", None)  # e.g. a conjunction alone: ts_rank's calc_rank_and
        assert held_vectors.keyword_scorer(CORPORA, query_terms("Marcel tea"), reach_of(alice)) is None
    else:
        monkeypatch.setattr(held_words.HeldWords, "scored", statement_not_sent)  # any surprise in the copy's scoring
    with CaptureQueriesContext(connection) as statements:
        found = search(access_for_user(user=alice), SearchRequest(query="Marcel tea"))
    assert sum("ts_rank" in sent["sql"] for sent in statements.captured_queries) == 1
    assert found and ranked(statement)[0][0] in {(result.type, result.candidate.id) for result in found}


def test_a_claim_leaves_the_held_keyword_leg_when_it_lapses(api: Api, owner: Persona, alice: User) -> None:
    soon = timezone.now() + timedelta(hours=1)
    lapsing = remember(alice, "The parking permit is valid this week.", expires_at=soon)
    remember(alice, "The parking code is 4711.")
    held(alice)
    now = keyword_leg(alice, "parking permit", [(None, None)], held=True)
    later = keyword_leg(alice, "parking permit", [(None, None)], held=True, at=soon + timedelta(seconds=1))
    assert ("claim", lapsing.id) in ranked(now)[0] and ("claim", lapsing.id) not in ranked(later)[0]
    assert ranked(later)[0]


def shown(result: SearchResult) -> dict[str, Any]:
    """What a search shows of a result but its scores (a vector leg's may differ in its sixth place), and what its
    boosts are drawn from."""
    shown = {name: value for name, value in result.as_json().items() if name not in ("score", "legs")}
    return shown | {"conversations": result.conversation_ids, "speaker": result.speaker}


def statement_not_sent(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("the vector statement was sent")


def test_a_vector_stored_after_its_row_sets_the_copy_aside(api: Api, owner: Persona, alice: User) -> None:
    """A row written without its vector (the worker embeds it later) and the copy read meanwhile: once its vector is
    stored, the copy is not read again until it holds it."""
    a_small_memory(api, owner, alice)
    late = ClaimFactory.create(owner=alice, statement="Marcel opened a tea room in Porto.")  # no vector yet
    memory_changed(alice.pk)
    held(alice)
    embedder = get_embedder()
    vectors_write(Claim, [late], [embedder.embed_query(late.statement)], embedder.model_id)
    assert nearest(alice, "Marcel's tea room", [(None, None)]) is None
    drained(held_vectors.HOLDING)
    found = nearest(alice, "Marcel's tea room", [(None, None)])
    assert found is not None and ("claim", late.id) in ranked(found)[0]


def test_a_reach_with_no_rows_holds_an_empty_copy(alice: User) -> None:
    memory_changed(alice.pk)  # a version, as any write of theirs sets
    held(alice)
    assert nearest(alice, "tea", [(None, None), (datetime(2026, 1, 1, tzinfo=UTC), None)]) == [[], []]


def test_a_write_an_erasure_or_a_redis_that_lost_its_keys_sets_the_copy_aside_until_it_is_read_again(
    api: Api, owner: Persona, alice: User
) -> None:
    a_small_memory(api, owner, alice)
    held(alice)
    new = remember(alice, "Marcel moved to Porto in May.")  # the version moved on
    assert nearest(alice, "Where does Marcel live?", [(None, None)]) is None
    drained(held_vectors.HOLDING)
    found = nearest(alice, "Where does Marcel live?", [(None, None)])
    assert found is not None and ("claim", new.id) in ranked(found)[0]

    cache.set(dropped_key(alice.pk), "an erasure's new mark")
    assert nearest(alice, "tea", [(None, None)]) is None
    drained(held_vectors.HOLDING)
    assert nearest(alice, "tea", [(None, None)]) is not None

    version = cache.get(memory_version_key(alice.pk))
    cache.clear()  # a Redis restarted without its file: no version until the owner's next write
    assert nearest(alice, "tea", [(None, None)]) is None
    drained(held_vectors.HOLDING)
    assert nearest(alice, "tea", [(None, None)]) is None and not cache.get(held_vectors.EPOCH_KEY)
    cache.set(memory_version_key(alice.pk), version, timeout=None)  # counted again to the same number
    assert nearest(alice, "tea", [(None, None)]) is None
    drained(held_vectors.HOLDING)
    assert cache.get(held_vectors.EPOCH_KEY) is not None  # a new epoch, for the copy read again
    assert nearest(alice, "tea", [(None, None)]) is not None


def test_no_copy_is_held_while_an_erasure_is_under_way(api: Api, owner: Persona, alice: User) -> None:
    """From an erasure's start to its mark set after its commit, searches read the rows: in the moment between the
    commit and the mark, a copy would still show what was erased."""
    a_small_memory(api, owner, alice)
    erased = remember(alice, "Marcel's passport number is X1234567.")
    held(alice)
    question = "What is Marcel's passport number?"

    def elsewhere() -> list[list[Hit]] | None:  # another request's thread, outside the erasure's transaction
        found: list[list[list[Hit]] | None] = []

        def searched() -> None:
            try:
                found.append(nearest(alice, question, [(None, None)]))
            finally:
                connection.close()  # this thread's connection

        worker = threading.Thread(target=searched)
        worker.start()
        worker.join()
        return found[0]

    with transaction.atomic():
        claims_erase(owner=alice, claim_ids={erased.id})
        assert elsewhere() is None  # set aside at once
        drained(held_vectors.HOLDING)
        assert elsewhere() is None and str(cache.get(dropped_key(alice.pk))).startswith(ERASING_MARK)  # nor read
    found = elsewhere()  # the statement, after the commit
    assert not str(cache.get(dropped_key(alice.pk))).startswith(ERASING_MARK)
    drained(held_vectors.HOLDING)
    found = elsewhere()
    assert found is not None and ("claim", erased.id) not in ranked(found)[0]  # read again once it committed


def test_a_claim_leaves_the_copy_when_it_lapses_unless_it_is_pinned(api: Api, owner: Persona, alice: User) -> None:
    soon = timezone.now() + timedelta(hours=1)
    lapsing = remember(alice, "The parking permit is valid this week.", expires_at=soon)
    pinned = remember(alice, "The parking code is 4711.", expires_at=soon, pinned=True)
    held(alice)
    now = nearest(alice, "parking", [(None, None)])
    later = nearest(alice, "parking", [(None, None)], at=soon + timedelta(seconds=1))
    assert now is not None and later is not None
    assert {("claim", lapsing.id), ("claim", pinned.id)} <= set(ranked(now)[0])
    assert ("claim", lapsing.id) not in ranked(later)[0] and ("claim", pinned.id) in ranked(later)[0]


def test_a_claim_retired_is_not_found_once_its_write_has_moved_the_version(
    api: Api, owner: Persona, alice: User
) -> None:
    """Between a write's commit and its version's move (the writer's next step, before it answers) a search may read
    the memory as the copy holds it, from before the write; once the version has moved, never."""
    a_small_memory(api, owner, alice)
    retired = remember(alice, "Marcel's tea shop is on Rua Augusta.")
    held(alice)
    access, question = access_for_user(user=alice), SearchRequest(query="Where is Marcel's tea shop?")
    Claim.objects.filter(pk=retired.pk).update(status="superseded")  # the commit; its version moved after it
    memory_changed(alice.pk)
    for _ in range(2):  # the statements, then the copy read again
        found = search(access, question)
        assert found and retired.id not in {result.candidate.id for result in found}
        drained(held_vectors.HOLDING)
    assert held_vectors.results_held(CORPORA, reach_of(alice)) is not None


def test_a_copy_is_held_per_reach_and_never_answers_another(
    api: Api, owner: Persona, other: Persona, alice: User, bob: User
) -> None:
    a_small_memory(api, owner, alice)
    say(api, other, "Bob keeps bees in the garden.")
    held(alice)
    assert nearest(bob, "bees", [(None, None)]) is None  # bob's reach: no copy yet, alice's is never read for it
    drained(held_vectors.HOLDING)
    bobs = nearest(bob, "bees", [(None, None)])
    alices = nearest(alice, "bees", [(None, None)])
    assert bobs is not None and alices is not None
    assert ranked(bobs) == ranked(statement_finds(bob, "bees", [(None, None)])) and ranked(bobs)[0]
    assert not set(ranked(bobs)[0]) & set(ranked(alices)[0])
    bobs_results = held_vectors.results_held(CORPORA, reach_of(bob))  # nor are alice's results held for bob
    alices_results = held_vectors.results_held(CORPORA, reach_of(alice))
    assert bobs_results is not None and alices_results is not None and bobs_results["chunk"]
    assert all(not set(bobs_results.get(corpus, {})) & set(alices_results[corpus]) for corpus in alices_results)
    assert set(alices_results["claim"]) == set(Claim.objects.filter(owner=alice).values_list("pk", flat=True))
    embedder = get_embedder()
    vector = embedder.embed_query("tea")
    narrower = reach_of(alice) | {"excluded": ["person"]}
    assert held_vectors.nearest_within(CORPORA, vector, embedder.model_id, narrower, [(None, None)], 40) is None


def test_a_copy_of_fewer_partitions_holds_none_of_the_others_rows(api: Api, owner: Persona, alice: User) -> None:
    """A token that reads one partition of the owner's has a reach, and a copy, of its own: a row of a partition it
    cannot read is never ranked for it."""
    a_small_memory(api, owner, alice)
    work = Partition.objects.create(owner=alice, key="work", label="Work")
    secret = remember(alice, "Marcel's tea contract is worth 40,000 euros.", partition=work)
    say(api, owner, "The tea contract's terms are confidential.", conversation="work-chat", partitionKey="work")
    embedder = get_embedder()
    vector = embedder.embed_query("Marcel's tea contract")
    personal = reach_of(alice) | {"partitions": [Partition.objects.get(owner=alice, key="memory:personal").pk]}
    both = personal | {"partitions": [*personal["partitions"], work.pk]}
    for reach in (both, personal):
        assert held_vectors.nearest_within(CORPORA, vector, embedder.model_id, reach, [(None, None)], 40) is None
        drained(held_vectors.HOLDING)
    found = {
        name: held_vectors.nearest_within(CORPORA, vector, embedder.model_id, reach, [(None, None)], 40)
        for name, reach in (("both", both), ("personal", personal))
    }
    assert found["both"] is not None and ("claim", secret.id) in ranked(found["both"])[0]
    assert found["personal"] is not None and ("claim", secret.id) not in ranked(found["personal"])[0]
    assert ranked(found["personal"]) == ranked(
        vector_hits_within(CORPORA, vector, embedder.model_id, personal, [(None, None)], 40, exact=True)
    )
    # Nor are its words or its results held for the narrower reach.
    work_chunks = set(Chunk.objects.filter(partition=work).values_list("id", flat=True))
    held_results = {
        name: held_vectors.results_held(CORPORA, reach) for name, reach in (("both", both), ("personal", personal))
    }
    assert held_results["both"] is not None and held_results["personal"] is not None
    assert work_chunks and work_chunks <= set(held_results["both"]["chunk"])
    assert not work_chunks & set(held_results["personal"]["chunk"])
    assert secret.id in held_results["both"]["claim"] and secret.id not in held_results["personal"]["claim"]
    terms = query_terms("confidential contract")
    for name, reach in (("both", both), ("personal", personal)):
        scorer = held_vectors.keyword_scorer(CORPORA, terms, reach)
        assert scorer is not None
        found_ids = {
            hit.id for hit in legs.keyword_hits_within(CORPORA, terms, reach, [(None, None)], 40, held=scorer)[0]
        }
        assert bool(found_ids & work_chunks) == (name == "both") and bool(secret.id in found_ids) == (name == "both")


def test_a_reach_larger_than_is_searched_exactly_is_not_held(
    api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_small_memory(api, owner, alice)
    monkeypatch.setattr(legs, "EXACT_ROWS", 2)
    assert nearest(alice, "tea", [(None, None)]) is None
    drained(held_vectors.HOLDING)
    assert nearest(alice, "tea", [(None, None)]) is None
    assert not held_vectors._copies


def test_no_copy_is_read_or_handed_on_inside_a_transaction(api: Api, owner: Persona, alice: User) -> None:
    a_small_memory(api, owner, alice)
    held(alice)
    with transaction.atomic():
        assert connection.in_atomic_block
        assert nearest(alice, "tea", [(None, None)]) is None
    held_vectors.forget_all()
    with transaction.atomic():
        assert nearest(alice, "tea", [(None, None)]) is None
    drained(held_vectors.HOLDING)
    assert not held_vectors._copies  # nothing was handed on


def test_a_child_forked_while_the_copies_lock_is_held_can_take_it() -> None:
    with held_vectors._lock:
        child = os.fork()
        if child == 0:
            taken = held_vectors._lock.acquire(timeout=5)
            os._exit(0 if taken else 1)
    assert exit_code(child) == 0

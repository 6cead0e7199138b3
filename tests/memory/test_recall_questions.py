"""Ranking by what a question says besides its words (issue 17): its time, its people, names that are stop
words; times that mean what they say; and slots that each add something. Small synthetic conversations."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.access import access_for_user
from memory.models import Chunk, Evidence, Node, Source, User
from memory.pipeline.runner import run_operation
from memory.recall.caching import reach_key
from memory.recall.question import asked_window
from memory.recall.search import SearchRequest, search
from memory.recall.terms import _PLAIN, query_terms, words_as_parsed
from memory.recall.threads import drained
from tests.conftest import Api, Persona, owed_settled, redis_left_alone
from tests.factories import ClaimFactory, NodeFactory, PartitionFactory

pytestmark = pytest.mark.django_db


def chat(api: Api, persona: Persona, conversation: str, *turns: tuple[str, str, str], **body: Any) -> None:
    """Ingest (speaker, text, ISO time) turns as one conversation and process it."""
    messages = [
        {"id": f"{conversation}-{n}", "role": "other", "speaker": speaker, "content": text, "timestamp": when}
        for n, (speaker, text, when) in enumerate(turns)
    ]
    body["conversation"] = {"id": conversation, "messages": messages}
    response = api.post("/ingest/conversation", persona, body)
    assert response.status_code == 202, response.content
    run_operation(response.json()["operationId"])


def found(
    api: Api, persona: Persona, query: str, headers: dict[str, str] | None = None, **options: Any
) -> list[dict[str, Any]]:
    drained("vocabulary")  # what the last search handed to recall's thread is kept before the clear, not after it
    cache.clear()  # the reference time and speakers are cached (the test's writes never commit); asked afresh
    response = api.post("/query/search", persona, {"query": query, **options}, headers=headers)
    assert response.status_code == 200, response.content
    return list(response.json()["searchResults"])


def message_ids(results: list[dict[str, Any]]) -> list[str]:
    return [ref["messageId"] for result in results for ref in result["evidence"] if ref["messageId"]]


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did Melanie paint on October 13, 2023?", "2023-10-12T10:00", "2023-10-14T14:00"),
        ("What did she find on 1 February, 2023?", "2023-01-31T10:00", "2023-02-02T14:00"),
        ("What happened on 2023-03-05?", "2023-03-04T10:00", "2023-03-06T14:00"),
        ("What setback did she face in October 2023?", "2023-10-01T00:00", "2023-11-01T00:00"),
        ("When did Melanie go camping in June?", "2023-06-01T00:00", "2023-07-01T00:00"),
        ("What did I cook in December?", "2022-12-01T00:00", "2023-01-01T00:00"),
        ("How often did she swim in 2022?", "2022-01-01T00:00", "2023-01-01T00:00"),
        ("What did we talk about yesterday?", "2023-10-19T00:00", "2023-10-20T00:00"),
        ("What did I read last month?", "2023-09-01T00:00", "2023-10-01T00:00"),
        ("What did I plan last week?", "2023-10-09T00:00", "2023-10-16T00:00"),
    ],
)
def test_the_time_a_question_names_is_read_against_the_reference_time(question: str, start: str, end: str) -> None:
    window = asked_window(question, datetime(2023, 10, 20, 15, 0, tzinfo=UTC))
    assert window is not None
    assert (window.start, window.end) == (
        datetime.fromisoformat(start).replace(tzinfo=UTC),
        datetime.fromisoformat(end).replace(tzinfo=UTC),
    )


@pytest.mark.parametrize(
    "question", ["May I ask what Anna likes?", "What may Anna like?", "Who lives in Paris?", "What is on 2023-02-30?"]
)
def test_a_question_without_a_date_has_no_window(question: str) -> None:
    assert asked_window(question, datetime(2023, 10, 20, tzinfo=UTC)) is None


def _parsed_by_postgresql(text: str) -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT lexeme FROM unnest(to_tsvector('simple', %s)) ORDER BY positions[1], lexeme", [text])
        return [row[0] for row in cursor.fetchall()]


def test_plain_questions_are_cut_into_words_as_postgresql_cuts_them() -> None:
    import random

    chooser = random.Random(18)
    words = ["Caroline", "LGBTQ", "support", "group", "3pm", "abc123", "x2", "2023", "10", "000", "I", "don", "s",
             "May", "rock", "n", "roll", "A", "b", "Dana", "q4", "7th", "MiXeD"]  # fmt: skip
    gaps = [" ", "  ", ", ", "? ", "! ", "'", "'s ", ": ", ":", "; ", " (", ") ", ' "', '" ', ". ", "\n", "\t", ","]
    for _ in range(300):
        count = chooser.randint(1, 12)
        text = "".join(chooser.choice(words) + chooser.choice(gaps) for _ in range(count))
        text = text.rstrip(" .\n\t") + chooser.choice(["", ".", "?", "!", "'", ")"])
        assert _PLAIN.fullmatch(text), text  # the cut without a round trip is the one tested
        assert words_as_parsed(text) == _parsed_by_postgresql(text), text


@pytest.mark.parametrize(
    "text", ["ABC-1234 is late", "mail billing@acme.test now", "version 4.12", "e.g. this", "café au lait", "U.S. trip"]
)
def test_other_questions_are_cut_by_postgresql_itself(text: str) -> None:
    assert not _PLAIN.fullmatch(text)
    assert words_as_parsed(text) == _parsed_by_postgresql(text)


@pytest.mark.parametrize("text", ["", "   ", "?!", "x" * 300 + " and more", "a " * 2500])
def test_empty_punctuation_only_and_overlong_questions_are_cut_as_postgresql_cuts_them(text: str) -> None:
    assert words_as_parsed(text) == _parsed_by_postgresql(text[:4000])


def test_names_that_are_stop_words_stay_in_the_query() -> None:
    assert query_terms("What did Ben Pereira say to Will in May?")[:3] == ["ben", "pereira", "say"]
    assert "will" in query_terms("What did Ben Pereira say to Will in May?")
    # Opening a sentence, any word is capitalised: "Will you" is not a name.
    assert query_terms("Will you remind me? Will it rain?") == ["remind", "rain"]


def test_a_name_that_is_a_stop_word_finds_that_person(api: Api, owner: Persona, alice: User) -> None:
    chat(
        api, owner, "team",
        ("Anna", "Ben approved the travel budget for the offsite.", "2026-03-02T09:00:00Z"),
        ("Anna", "Carla approved the travel budget for the workshop.", "2026-03-02T09:01:00Z"),
    )  # fmt: skip
    assert message_ids(found(api, owner, "What did Ben approve?"))[0] == "team-0"
    assert message_ids(found(api, owner, "What did Carla approve?"))[0] == "team-1"


def test_the_month_a_question_names_brings_turns_from_that_month_first(api: Api, owner: Persona, alice: User) -> None:
    chat(api, owner, "spring", ("Melanie", "I baked a lemon cake for the neighbours.", "2023-05-14T10:00:00Z"))
    chat(api, owner, "summer", ("Melanie", "I baked a lemon cake for the school fair.", "2023-08-20T10:00:00Z"))
    may = found(api, owner, "What did Melanie bake in May?")
    assert message_ids(may)[0] == "spring-0"
    assert may[0]["boosts"]["when"] > 0
    august = found(api, owner, "What did Melanie bake in August?")
    assert message_ids(august)[0] == "summer-0"
    assert "when" not in found(api, owner, "What did Melanie bake?")[0]["boosts"]


def test_a_turn_from_the_named_day_is_found_beyond_the_usual_candidates(
    api: Api, owner: Persona, alice: User, settings: Any
) -> None:
    # Fewer keyword candidates (4) than turns that match better: only the pass within the day brings it in.
    settings.SEARCH_CANDIDATES = 4
    for day in range(1, 31, 3):
        text = "Painted a seascape." if day == 7 else f"Painted canvas {day}."
        chat(api, owner, f"day{day}", ("Anna", text, f"2023-09-{day:02d}T10:00:00Z"))
    cache.clear()
    request = SearchRequest(query="Which canvas did Anna paint on 7 September 2023?", limit=1, use_vector=False)
    results = search(access_for_user(user=alice), request)
    assert [result.evidence[0]["messageId"] for result in results] == ["day7-0"]


def test_turns_said_by_the_person_a_question_names_come_first(api: Api, owner: Persona, alice: User) -> None:
    chat(
        api, owner, "talk",
        ("Caroline", "Melanie, hiking in the hills sounds lovely, enjoy the weekend!", "2023-05-01T10:00:00Z"),
        ("Melanie", "Hiking in the hills with the kids every weekend.", "2023-05-01T10:01:00Z"),
    )  # fmt: skip
    results = found(api, owner, "Where does Melanie go hiking?")
    first = next(result for result in results if result["type"] == "chunk")
    assert first["evidence"][0]["messageId"] == "talk-1"
    assert first["boosts"]["speaker"] > 0
    # Nobody the question names spoke: no speaker boost anywhere.
    assert all("speaker" not in result["boosts"] for result in found(api, owner, "Who goes hiking in the hills?"))


def test_who_spoke_in_reach_is_read_once_then_new_questions_ask_nothing_more(
    api: Api, owner: Persona, alice: User
) -> None:
    chat(
        api, owner, "talk",
        ("Caroline", "Melanie, the pottery class sounds fun!", "2023-05-01T10:00:00Z"),
        ("Melanie", "Pottery on Tuesdays, painting on Sundays.", "2023-05-01T10:01:00Z"),
    )  # fmt: skip
    cache.clear()
    access = access_for_user(user=alice)
    search(access, SearchRequest(query="Does Caroline like pottery?", use_vector=False))
    drained("vocabulary")  # recall's thread has kept what the search read
    with CaptureQueriesContext(connection) as later:
        results = search(access, SearchRequest(query="What does Melanie paint on Sundays?", use_vector=False))
    # New words, a speaker never asked about before: no lookup of who spoke (the set is cached for the reach).
    assert not [query["sql"] for query in later.captured_queries if "split_part" in query["sql"]]
    chunk = next(result for result in results if result.type == "chunk")
    assert chunk.evidence[0]["messageId"] == "talk-1" and chunk.candidate.boosts["speaker"] > 0


def anchors_read(statements: list[dict[str, Any]]) -> list[str]:
    """Of a search's statements, those reading the reference time and who spoke."""
    return [query["sql"] for query in statements if "max(newest)" in query["sql"] or "split_part" in query["sql"]]


def test_a_quiet_memory_reads_its_anchors_once_and_a_change_has_them_read_anew(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    from memory.recall import anchors

    chat(api, owner, "talk", ("Caroline", "The pottery class sounds fun!", "2023-05-01T10:00:00Z"))
    access = access_for_user(user=alice)
    search(access, SearchRequest(query="Does Caroline like pottery?", use_vector=False))
    drained("vocabulary")  # recall's thread has kept what the search read
    client = cache._cache.get_client()  # type: ignore[attr-defined]
    (key,) = client.scan_iter(match=cache.make_key(f"recall:reference:{alice.pk}:*"))
    assert 600 < client.ttl(key) <= anchors.CACHE_SECONDS  # kept past any minute, while nothing changes
    with CaptureQueriesContext(connection) as quiet:
        search(access, SearchRequest(query="Does Caroline like painting?", use_vector=False))
    assert not anchors_read(quiet.captured_queries)
    body = {"conversation": {"id": "later", "messages": [
        {"id": "later-0", "role": "other", "speaker": "Dana", "content": "I threw a vase.",
         "timestamp": "2024-02-01T10:00:00Z"},
    ]}}  # fmt: skip
    accepted = api.post("/ingest/conversation", owner, body).json()
    with CaptureQueriesContext(connection) as accepted_then:
        search(access, SearchRequest(query="Does Caroline like painting?", use_vector=False))
    assert anchors_read(accepted_then.captured_queries)  # a new source: read anew
    drained("vocabulary")
    run_operation(accepted["operationId"])  # its turn chunked: who spoke read anew too
    results = search(access, SearchRequest(query="What did Dana throw?", use_vector=False))
    chunk = next(result for result in results if result.type == "chunk")
    assert chunk.evidence[0]["messageId"] == "later-0" and chunk.candidate.boosts["speaker"] > 0
    assert chunk.candidate.boosts["recency"] == pytest.approx(0.1)  # the newest memory now


def accepted_job(api: Api, owner: Persona) -> Any:
    """The job of a conversation just accepted (not run), with the owner's memory version after the accept."""
    from memory.models import Operation
    from memory.pipeline.steps import Job
    from memory.services.audit import memory_version

    body = {"conversation": {"id": "talk", "messages": [{"id": "talk-0", "role": "user", "content": "Hello."}]}}
    operation = Operation.objects.get(pk=api.post("/ingest/conversation", owner, body).json()["operationId"])
    assert operation.source is not None
    return Job(operation=operation, source=operation.source), memory_version(operation.source.owner_id)


def test_the_chunk_step_changes_the_owners_memory_version(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    from memory.pipeline.steps import ChunkText
    from memory.services.audit import memory_version

    job, before = accepted_job(api, owner)
    ChunkText().run(job)
    assert memory_version(alice.pk) == before + 1
    ChunkText().run(job)  # again: no chunk made or removed
    assert memory_version(alice.pk) == before + 1


def test_the_reconcile_step_changes_the_owners_memory_version_for_the_nodes_it_writes_too(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    from memory.extraction.base import Extraction, NodeRef
    from memory.pipeline.steps import Reconcile
    from memory.services.audit import memory_version

    job, before = accepted_job(api, owner)
    job.extraction = Extraction(people=[NodeRef("Person", "Dana")])
    Reconcile().run(job)  # a person named, no claim: nothing audited
    assert Node.objects.filter(owner=alice, label="Dana").exists()
    assert memory_version(alice.pk) > before  # the step's and reconcile's own


def test_who_spoke_is_forgotten_with_the_owner_s_other_cached_views(api: Api, owner: Persona, alice: User) -> None:
    from memory.recall.caching import drop_cached_views

    chat(api, owner, "talk", ("Melanie", "Pottery on Tuesdays.", "2023-05-01T10:01:00Z"))
    cache.clear()
    search(access_for_user(user=alice), SearchRequest(query="What does Melanie do on Tuesdays?", use_vector=False))
    drained("vocabulary")
    client = cache._cache.get_client()  # type: ignore[attr-defined]
    for kind in ("speakers-read", "reference"):
        assert list(client.scan_iter(match=cache.make_key(f"recall:{kind}:{alice.pk}:*")))
    drop_cached_views(alice.pk)  # as an erasure does
    for kind in ("speaker*", "reference"):
        assert not list(client.scan_iter(match=cache.make_key(f"recall:{kind}:{alice.pk}:*")))


def test_a_reach_without_sources_keeps_no_reference_time_but_its_absence(transactional_db: None, alice: User) -> None:
    from memory.recall import anchors
    from tests.memory.test_recall_word_statistics import reach_of

    ClaimFactory.create(owner=alice, statement="Melanie throws pots.")  # a claim, no source
    search(access_for_user(user=alice), SearchRequest(query="What does Melanie throw?", use_vector=False))
    drained("vocabulary")
    params = reach_of(alice)
    _, newest = cache.get(reach_key(anchors.REFERENCE, params))
    assert newest is None  # "now" is whenever it is asked, not when this search asked
    with CaptureQueriesContext(connection) as later:
        assert anchors.reference_time(params) <= timezone.now()
    assert not later.captured_queries


def test_an_erasure_before_the_thread_keeps_a_search_s_anchors_leaves_none_behind(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:

    from tests.memory.test_recall_word_statistics import erased_before_the_thread_keeps

    chat(api, owner, "talk", ("Melanie", "Pottery on Tuesdays.", "2023-05-01T10:01:00Z"))
    cache.clear()
    client = cache._cache.get_client()  # type: ignore[attr-defined]
    erased_before_the_thread_keeps(alice, "What does Melanie do?")  # who spoke may predate the erasure
    for kind in ("speaker*", "reference"):  # read before it (counts the thread made after it are kept)
        assert not list(client.scan_iter(match=cache.make_key(f"recall:{kind}:{alice.pk}:*")))
    search(access_for_user(user=alice), SearchRequest(query="What does Melanie do?", use_vector=False))
    drained("vocabulary")
    assert list(client.scan_iter(match=cache.make_key(f"recall:speakers-read:{alice.pk}:*")))  # read after it: kept


@pytest.mark.parametrize("erased", ["source", "claim", "node"])
def test_an_erasure_drops_the_owner_s_cached_views_once_it_commits(
    transactional_db: None, api: Api, owner: Persona, alice: User, erased: str
) -> None:
    from django.db import transaction

    from memory.recall.caching import ERASING, dropped_key
    from memory.services.claims import claim_erase
    from memory.services.erasure import source_erase
    from memory.services.nodes import node_erase

    chat(api, owner, "talk", ("Melanie", "Pottery on Tuesdays.", "2023-05-01T10:01:00Z"))
    claim = ClaimFactory.create(owner=alice, statement="Melanie throws pots.")
    node = NodeFactory.create(owner=alice, type="Project", label="Pottery class")
    access = access_for_user(user=alice)
    search(access, SearchRequest(query="What does Melanie do on Tuesdays?"))
    drained("vocabulary")
    client = cache._cache.get_client()  # type: ignore[attr-defined]

    def cached() -> list[bytes]:
        return list(client.scan_iter(match=cache.make_key(f"recall:*:{alice.pk}:*")))

    kinds = {key.decode().split(":")[3] for key in cached()}
    assert {"df", "reference", "speakers-read"} <= kinds
    with transaction.atomic():
        if erased == "source":
            source_erase(access=access, source_id=Source.objects.get(owner=alice, external_id="talk").pk)
        elif erased == "claim":
            claim_erase(access=access, claim_id=claim.pk)
        else:
            node_erase(access=access, node=node)
        assert cached()  # not before it commits
    assert cache.get(dropped_key(alice.pk))  # the erasure mark at once: what a thread keeps from before goes again
    drained(ERASING)  # the keys deleted off the request's path
    assert not cached()


def test_a_transaction_s_erasures_drop_the_owner_s_cached_views_once_and_a_rolled_back_one_none(
    transactional_db: None, alice: User, bob: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import transaction

    from memory.recall import caching

    dropped: list[int] = []
    monkeypatch.setattr(caching, "_views_deleted", dropped.append)
    with transaction.atomic():
        caching.views_dropped_on_commit(alice.pk)  # a source's erasure
        caching.views_dropped_on_commit(alice.pk)  # the claims derived from it
        caching.views_dropped_on_commit(bob.pk)
        assert dropped == []  # not before it commits
    drained(caching.ERASING)
    assert dropped == [alice.pk, bob.pk]
    with transaction.atomic():
        with contextlib.suppress(RuntimeError), transaction.atomic():
            caching.views_dropped_on_commit(alice.pk)
            raise RuntimeError  # that erasure rolled back, with its callback
        caching.views_dropped_on_commit(alice.pk)  # another, committed
    drained(caching.ERASING)
    assert dropped == [alice.pk, bob.pk, alice.pk]


def test_erasures_committed_while_the_owner_s_deletion_waits_share_it(
    transactional_db: None, alice: User, bob: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from django.db import transaction

    from memory.recall import caching
    from memory.recall.threads import process_pool

    seen: list[tuple[int, str]] = []  # each deletion: whose, and the erasure mark as it started
    deleting, go_on = threading.Event(), threading.Event()

    def deleted(owner_id: int) -> None:
        seen.append((owner_id, cache.get(caching.dropped_key(owner_id))))
        deleting.set()
        go_on.wait(10)

    def erased(owner: User) -> str:
        with transaction.atomic():
            caching.views_dropped_on_commit(owner.pk)
        return str(cache.get(caching.dropped_key(owner.pk)))

    monkeypatch.setattr(caching, "_views_deleted", deleted)
    busy = threading.Event()
    process_pool(caching.ERASING, 1).submit(busy.wait, 10)  # the thread busy with another owner's keys
    marks = [erased(owner) for owner in (alice, alice, bob, alice)]  # erasures one request each
    busy.set()
    assert deleting.wait(10)
    later = erased(alice)  # while alice's deletion runs: it may have passed keys this erasure's views are in
    go_on.set()
    drained(caching.ERASING)
    # One deletion per owner for the erasures while it waited, started after the last of their marks; one more after.
    assert seen == [(alice.pk, marks[3]), (bob.pk, marks[2]), (alice.pk, later)]


def test_what_was_kept_when_redis_could_not_say_whether_an_erasure_came_between_goes_again(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from config import cache as shared
    from memory.recall import caching

    monkeypatch.setattr(shared, "AWAY_SECONDS", 0.3)
    key = caching.owner_key("df", alice.pk)

    def keep() -> None:
        cache.set(key, 7)
        shared.noted_away()  # kept; then the process leaves Redis alone: the mark cannot be read

    caching.kept_unless_erased(keep, [key], alice.pk, None)  # no erasure known when the rows were read
    owed_settled(10)
    assert cache.get(key) is None  # dropped once Redis was asked again, not trusted


def test_what_a_search_keeps_while_redis_is_away_is_not_taken_for_kept_nor_dropped_later(
    alice: User, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing was written (every call refused at once): no drop of the owner's cached views is owed for it. Each
    search during an outage used to log `erasure.cache_unavailable` and owe one (every key of the owner's deleted once
    Redis answered)."""
    import logging

    from config import redis_retry
    from memory.recall import caching

    redis_left_alone(monkeypatch)
    key = caching.owner_key("df", alice.pk)
    with caplog.at_level(logging.WARNING, logger="memory.recall"):
        caching.kept_unless_erased(lambda: caching.keep_many({key: 7}, 60), [key], alice.pk, None)
    assert redis_retry.owed() == 0 and caplog.records == []


def test_a_keep_that_timed_out_before_redis_was_left_alone_is_dropped_once_it_answers(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first write's reply was lost (it may have landed), the next one was not tried: the keys go again."""
    from redis.exceptions import TimeoutError as RedisTimeoutError

    from config import cache as shared
    from config import redis_retry
    from memory.recall import caching

    monkeypatch.setattr(shared, "AWAY_SECONDS", 60)
    key = caching.owner_key("df", alice.pk)
    cache.set(key, 7)  # as if the lost write had landed

    sent = cache.set_many
    calls: list[int] = []

    def timed_out_first(values: dict[str, object], seconds: int) -> None:
        calls.append(len(values))
        if len(calls) == 1:
            shared.noted_away()
            raise RedisTimeoutError("Timeout reading from socket")
        sent(values, seconds)  # RedisAway

    def keep() -> None:
        caching.keep_many({key: 7}, 60)
        caching.keep_many({caching.owner_key("df:size", alice.pk): 1}, 60)

    with monkeypatch.context() as patched:
        patched.setattr(cache, "set_many", timed_out_first)
        caching.kept_unless_erased(keep, [key], alice.pk, None)
    assert len(calls) == 2 and redis_retry.owed() == 1  # the owner's views, once Redis answers
    shared.redis_heard()
    owed_settled(10)
    assert cache.get(key) is None


def test_a_keep_refused_after_an_earlier_write_of_it_was_kept_still_checks_for_an_erasure(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first write kept, then Redis away for the second: an erasure may have come between the rows' reading and
    the first write, so the keys go once Redis answers (RedisAway says only that the second kept nothing)."""
    from config import cache as shared
    from config import redis_retry
    from memory.recall import caching

    monkeypatch.setattr(shared, "AWAY_SECONDS", 60)
    key = caching.owner_key("df", alice.pk)

    def keep() -> None:
        caching.keep_many({key: 7}, 60)
        shared.noted_away()  # another thread's call found Redis not answering
        caching.keep_many({caching.owner_key("df:size", alice.pk): 1}, 60)

    caching.kept_unless_erased(keep, [key], alice.pk, None)
    assert redis_retry.owed() == 1  # the owner's views, once Redis answers
    shared.redis_heard()
    owed_settled(10)
    assert cache.get(key) is None


def test_past_the_people_read_at_once_a_question_s_names_are_looked_up_one_by_one(
    api: Api, owner: Persona, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.recall import anchors

    monkeypatch.setattr(anchors, "SPEAKERS_READ", 1)  # this handful stands for a group chat of hundreds
    chat(
        api, owner, "group",
        ("Anna", "Who is bringing the cake?", "2023-05-01T10:00:00Z"),
        ("Bert", "Not me, I bring the drinks.", "2023-05-01T10:01:00Z"),
        ("Melanie", "I baked a lemon cake.", "2023-05-01T10:02:00Z"),
    )  # fmt: skip
    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        results = search(access_for_user(user=alice), SearchRequest(query="What cake did Melanie bake?"))
    # Walked anna and bert, not all: melanie (past them) is looked up as a word of the question.
    sql = [query["sql"] for query in captured.captured_queries]
    assert [text for text in sql if "unnest(" in text and "split_part" in text]
    chunk = next(result for result in results if result.type == "chunk")
    assert chunk.evidence[0]["messageId"] == "group-2" and chunk.candidate.boosts["speaker"] > 0


def test_recency_counts_back_from_the_newest_memory_not_the_wall_clock(api: Api, owner: Persona, alice: User) -> None:
    # An archive from 2023, imported today: its newest turn is "now" for recency.
    chat(api, owner, "old", ("Anna", "Started learning the cello.", "2023-01-10T10:00:00Z"))
    chat(api, owner, "new", ("Anna", "Still learning the cello, grade two now.", "2023-10-10T10:00:00Z"))
    results = {message_ids([result])[0]: result for result in found(api, owner, "cello") if message_ids([result])}
    newest, oldest = results["new-0"]["boosts"]["recency"], results["old-0"]["boosts"]["recency"]
    assert newest == pytest.approx(0.1)
    assert 0 < oldest < newest  # nine months older: about a quarter of the boost left


def test_a_node_card_is_as_recent_as_the_newest_thing_said_about_it(api: Api, owner: Persona, alice: User) -> None:
    chat(api, owner, "news", ("Anna", "The harbour festival starts on Friday.", "2026-03-02T09:00:00Z"))
    source = Source.objects.get(owner=alice, kind="message")
    card = NodeFactory.create(owner=alice, type="Project", label="Harbour renovation")  # written down just now
    said = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
    claim = ClaimFactory.create(owner=alice, subject=card, statement="The harbour renovation was postponed.")
    Evidence.objects.create(owner=alice, claim=claim, source=source, excerpt="postponed", authored_at=said)
    result = next(result for result in found(api, owner, "harbour renovation") if result["type"] == "node")
    assert datetime.fromisoformat(result["time"].replace("Z", "+00:00")) == said
    # Almost two years before the newest memory in reach: no recency left, though the card was created now.
    assert "recency" not in result["boosts"]
    assert Node.objects.get(pk=card.pk).created_at > said + timedelta(days=600)


def test_a_bare_card_naming_only_what_the_question_names_goes_last(api: Api, owner: Persona, alice: User) -> None:
    NodeFactory.create(owner=alice, type="Person", label="Marcel")
    chat(
        api, owner, "chat",
        ("Anna", "Marcel is moving to Utrecht in spring.", "2026-03-02T09:00:00Z"),
        ("Anna", "Marcel plays the trumpet in a brass band.", "2026-03-02T09:01:00Z"),
    )  # fmt: skip
    results = found(api, owner, "Marcel")
    types = [result["type"] for result in results]
    assert "node" in types and "chunk" in types  # still shown when there is room
    assert types.index("node") > max(index for index, kind in enumerate(types) if kind != "node")
    # A card the question does not merely name keeps its place by relevance.
    NodeFactory.create(owner=alice, type="Person", label="Marcel Brass")
    assert any(result["type"] == "node" and "Brass" in result["text"] for result in found(api, owner, "brass")[:2])


@override_settings(CHUNK_TARGET_CHARS=80)
def test_two_pieces_of_one_turn_take_one_slot(api: Api, owner: Persona, alice: User) -> None:
    long = (
        "The quarterly report covers the harbour budget in detail. "
        "Another part of the quarterly report covers the harbour staffing. "
        "A last part of the quarterly report covers the harbour events."
    )
    chat(api, owner, "report", ("Anna", long, "2026-03-02T09:00:00Z"))
    assert Chunk.objects.filter(owner=alice, message_id="report-0").count() >= 2
    results = [result for result in found(api, owner, "quarterly report harbour") if result["type"] == "chunk"]
    assert message_ids(results).count("report-0") == 1


def test_what_another_owner_s_search_kept_is_never_read_for_this_owner(
    transactional_db: None, api: Api, owner: Persona, other: Persona, alice: User, bob: User
) -> None:
    from memory.services.audit import memory_version_key

    chat(api, owner, "archive", ("Anna", "Started learning the cello.", "2023-10-10T10:00:00Z"))
    chat(api, other, "bob", ("Melanie", "Cello lessons start again.", "2026-03-02T10:00:00Z"))
    for user in (alice, bob):  # each owner's own counter: the same number for both is common
        cache.set(memory_version_key(user.pk), 7, timeout=None)
    question = SearchRequest(query="What cello did Melanie start?", use_vector=False)
    bobs = search(access_for_user(user=bob), question)  # his reference time and speakers, kept for an hour
    drained("vocabulary")
    assert bobs[0].candidate.boosts["speaker"] > 0
    alices = search(access_for_user(user=alice), question)
    assert [result.evidence[0]["messageId"] for result in alices if result.type == "chunk"] == ["archive-0"]
    assert "speaker" not in alices[0].candidate.boosts and alices[0].candidate.boosts["recency"] == pytest.approx(0.1)


def test_another_owner_or_a_partition_out_of_reach_moves_neither_time_nor_speakers(
    api: Api, owner: Persona, other: Persona, alice: User
) -> None:
    chat(api, owner, "archive", ("Anna", "Started learning the cello.", "2023-10-10T10:00:00Z"))
    PartitionFactory.create(owner=alice, key="project:band")
    chat(
        api, owner, "band", ("Melanie", "Cello practice with the band.", "2026-03-01T10:00:00Z"),
        partitionKey="project:band",
    )  # fmt: skip
    chat(api, other, "bob", ("Melanie", "Cello lessons start again.", "2026-03-02T10:00:00Z"))
    # A search reads the personal partition unless asked for more.
    results = found(api, owner, "What cello did Melanie start?")
    assert message_ids(results) == ["archive-0"]
    # Its own newest memory is "now" for this reach: the 2026 turns of the band partition and of bob are not.
    assert results[0]["boosts"]["recency"] == pytest.approx(0.1)
    # Melanie spoke only where this token cannot read: nobody the question names spoke here.
    assert "speaker" not in results[0]["boosts"]
    # Reading every partition of alice's (never bob's), Melanie is a speaker, and the band turn the newest.
    everything = found(api, owner, "What cello did Melanie start?", headers={"X-Memory-Access-Scope": "workspace"})
    assert sorted(message_ids(everything)) == ["archive-0", "band-0"]
    band = next(result for result in everything if message_ids([result]) == ["band-0"])
    assert band["boosts"]["speaker"] > 0
    assert band["boosts"]["recency"] == pytest.approx(0.1)

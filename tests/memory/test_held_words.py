"""A row's words held in the process (memory.recall.held_words): matched and ranked to the bit as PostgreSQL's `@@`
and ts_rank(..., 1) match and rank them, and a word's query asked of PostgreSQL once per process."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.recall import held_words
from memory.recall.held_words import HeldWords, WordQuery

pytestmark = pytest.mark.django_db

LEXEMES = ["tea", "marcel", "lisbon", "tea-room", "naïve", "4.12", "-1234", "a", "zz", "e.g"]


def a_vector(rng: random.Random) -> str:
    """A tsvector's text: some lexemes, each at a few positions, some weighted, some stored without positions."""
    entries = []
    for lexeme in rng.sample(LEXEMES, rng.randint(1, len(LEXEMES))):
        quoted = "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
        if rng.random() < 0.15:
            entries.append(quoted)  # no positions: counts once, at weight D
            continue
        positions = sorted(rng.sample(range(1, 60), rng.randint(1, 6)))
        entries.append(quoted + ":" + ",".join(f"{p}{rng.choice(['', 'A', 'B', 'C', 'D'])}" for p in positions))
    return " ".join(entries)


def a_query(rng: random.Random) -> WordQuery:
    conjunctions = [tuple(rng.sample(LEXEMES, rng.randint(1, 2))) for _ in range(rng.randint(2, 3))]
    if rng.random() < 0.3:
        conjunctions = [(conjunctions[0][0],), (conjunctions[0][0],)]  # 'dog' | 'dog': one lexeme twice
    return tuple(conjunctions)


def query_text(query: WordQuery) -> str:
    def quoted(lexeme: str) -> str:
        return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"

    return " | ".join(" & ".join(quoted(lexeme) for lexeme in conjunction) for conjunction in query)


def read_as_held(vectors: list[str]) -> HeldWords | None:
    """The rows' words as a copy reads them: each search_vector as PostgreSQL writes it as text."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT v::text FROM unnest(%s::tsvector[]) WITH ORDINALITY AS t(v, n) ORDER BY t.n", [vectors])
        return HeldWords.read([text for (text,) in cursor.fetchall()])


def test_held_words_match_and_rank_to_the_bit_as_postgresql_does() -> None:
    rng = random.Random(18)
    vectors = [a_vector(rng) for _ in range(60)]
    queries = [a_query(rng) for _ in range(40)]
    held = read_as_held(vectors)
    assert held is not None
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT v.n, q.n, v.t::tsvector @@ q.t::tsquery, ts_rank(v.t::tsvector, q.t::tsquery, 1)::float8
               FROM unnest(%s::text[]) WITH ORDINALITY AS v(t, n), unnest(%s::text[]) WITH ORDINALITY AS q(t, n)""",
            [vectors, [query_text(query) for query in queries]],
        )
        expected = cursor.fetchall()
    scored = [held.scored(query) for query in queries]
    matched = ranked = 0
    for row, query, matches, rank in expected:
        holding, ranks = scored[query - 1]
        assert bool(holding[row - 1]) == matches, (vectors[row - 1], queries[query - 1])
        if matches:
            assert ranks[row - 1] == rank, (vectors[row - 1], queries[query - 1])  # the same float, not a near one
            matched += 1
            ranked += rank > 0
    assert 200 < matched < len(expected) and ranked == matched


def test_a_row_without_words_matches_nothing() -> None:
    held = HeldWords.read([None, "'tea':1"])
    assert held is not None
    holding, _ = held.scored((("tea",),))
    assert holding.tolist() == [False, True]


def test_a_lexeme_is_found_only_whole() -> None:
    held = read_as_held(["'tea':1 'tea-room':2", "'green':1 'tea':3A,4", "'steam':1 'team':2"])
    assert held is not None
    holding, ranks = held.scored((("tea",),))
    assert holding.tolist() == [True, True, False] and ranks[2] == 0


@pytest.mark.parametrize("lexeme", ["it''s", "back\\\\slash"])
def test_rows_whose_lexemes_hold_a_quote_or_a_backslash_hold_no_words(lexeme: str) -> None:
    assert HeldWords.read(["'tea':1", f"'{lexeme}':1 'tea':2"]) is None


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("'running' | 'run'", (("running",), ("run",))),
        ("'dog' | 'dog'", (("dog",), ("dog",))),
        ("'e' & 'mail' | 'e' & 'mail'", (("e", "mail"), ("e", "mail"))),
        ("'the'", (("the",),)),
        ("'it''s' | 'it'", (("it's",), ("it",))),
        ("'e' & 'mail'", None),  # a conjunction alone: ts_rank scores it by proximity (calc_rank_and)
        ("'run':* | 'run'", None),
        ("'new' <-> 'york' | 'new'", None),
        ("!'tea' | 'tea'", None),
        ("'tea':A | 'tea'", None),
        ("", None),
    ],
)
def test_a_words_query_is_read_only_as_a_disjunction_of_conjunctions(text: str, read: WordQuery | None) -> None:
    assert held_words._query_read(text) == read


def test_a_words_query_is_asked_of_postgresql_once_per_process() -> None:
    held_words._queries.clear()
    with CaptureQueriesContext(connection) as asked:
        first = held_words.word_queries(["running", "tea", "running"])
        again = held_words.word_queries(["tea", "running"])
    assert first == {"running": (("running",), ("run",)), "tea": (("tea",), ("tea",))}
    assert again == {"tea": first["tea"], "running": first["running"]}
    assert len(asked) == 1

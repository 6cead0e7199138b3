"""The keyword leg of a small reach, from the words of its rows held in this process (memory.recall.held_vectors).

The keyword statement (memory.recall.legs) scores each candidate Σ idf(word) · ts_rank(search_vector, word's query, 1)
in PostgreSQL: about 2 ms of a small memory's search, with PostgreSQL's work beside the query's embedding on the same
two cores. The copy of a reach that holds its vectors also holds each row's words as PostgreSQL indexed them (its
`search_vector`, read as text), so the same levels are picked and scored here, to the same bits:

- **A word's query** is what PostgreSQL makes of it (corpora.WORD_QUERY, as text), asked once per process and word, and
  read as a disjunction of conjunctions of lexemes; a small reach's vocabulary count gives those of the words its rows
  hold ('word' | 'stem': memory.recall.word_statistics.vocabulary_counted) without asking. Only such queries are scored
  here; any other shape (a conjunction alone, which ts_rank scores by proximity, a prefix, a phrase) sends the search to
  the statement.
- **A row matches** a word when it holds every lexeme of one conjunction (`@@`).
- **ts_rank** with normalisation 1 is PostgreSQL's `calc_rank_or` (tsrank.c) over the query's distinct lexemes in
  byte order, divided by log2(1 + the row's length), computed with its float4 steps: each lexeme's share is summed
  from its positions' weights (default 0.1, 0.2, 0.4, 1.0 for D, C, B, A), rounded as C rounds a float. The sum over
  a row's words is float8 in the order of the query's words, as `sum()` adds them.

A row's words are read with its vector and parsed once, when the copy is read (~31 ms of the interpreter for conv-26's
449 rows, on the copy's thread), so a copy is as current as its vectors are.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from django.db import connection

from memory.recall.corpora import WORD_QUERY

# A lexeme of a tsvector's text (none holds a quote: HeldWords.read) and its positions, a weight letter after each but
# D's: 'tea':3A,5
_ENTRY = re.compile(r"'([^']*)'(?::([0-9A-D,]+))?")
_DIGITS = re.compile(r"\d+")
_WEIGHTS = {letter: float(np.float32(value)) for letter, value in zip("DCBA", (0.1, 0.2, 0.4, 1.0), strict=True)}
_ZETA_2 = 1.64493406685  # tsrank.c's limit of Σ 1/i²
# A word's query as text: lexemes joined by " & " within a conjunction, conjunctions by " | ", nothing else.
_QUERY_LEXEME = re.compile(r"'((?:[^'\\]|''|\\.)*)'")
_QUERIES_OF = f"SELECT w.word, ({WORD_QUERY.format(word='w.word')})::text FROM unnest(%s::text[]) AS w(word)"  # noqa: S608
WORDS_KEPT = 50_000  # words whose query this process keeps; past it, it starts again

# A word's query: its conjunctions, each the lexemes it needs together; None where ts_rank would not score it
# as a disjunction (calc_rank_or), and the search runs the statement.
WordQuery = tuple[tuple[str, ...], ...]
_queries: dict[str, WordQuery | None] = {}


def _f32(value: float) -> float:
    """`value` as a C float holds it (round to nearest, ties to even; a double holds the exact result of a float's
    +, -, / and its rounding to float is the float operation's)."""
    return float(np.float32(value))


def _unquoted(text: str) -> str:
    return re.sub(r"''|\\(.)", lambda match: match.group(1) or "'", text)


def _query_read(text: str) -> WordQuery | None:
    """A word's query text read as its conjunctions, or None where it is not a plain disjunction of them."""
    conjunctions = []
    for part in text.split(" | ") if text else []:
        lexemes = part.split(" & ")
        if not all(_QUERY_LEXEME.fullmatch(lexeme) for lexeme in lexemes):
            return None  # a prefix, a weight, a phrase, a negation, brackets
        conjunctions.append(tuple(_unquoted(lexeme[1:-1]) for lexeme in lexemes))
    if not conjunctions or (len(conjunctions) == 1 and len(set(conjunctions[0])) > 1):
        return None  # nothing to match, or a conjunction alone (ts_rank's calc_rank_and)
    return tuple(conjunctions)


def word_queries(words: Iterable[str]) -> dict[str, WordQuery | None]:
    """Each word's query as PostgreSQL makes it (corpora.WORD_QUERY): this process's own, asked for once per word
    (one statement for every word it has not seen)."""
    words = list(dict.fromkeys(words))
    unseen = [word for word in words if word not in _queries]
    asked: dict[str, WordQuery | None] = {}
    if unseen:
        with connection.cursor() as cursor:
            cursor.execute(_QUERIES_OF, [unseen])
            asked = {word: _query_read(text) for word, text in cursor.fetchall()}
        if len(_queries) + len(asked) > WORDS_KEPT:
            _queries.clear()
        _queries.update(asked)
    return {word: asked[word] if word in asked else _queries.get(word) for word in words}


def queries_known(stems: dict[str, str | None]) -> None:
    """The queries of words PostgreSQL has already cut, kept as word_queries would ask for them: a word the parser
    leaves whole and stems to one lexeme or none (a stop word) is queried as itself or its stem, 'word' | 'stem'
    (memory.recall.word_statistics.vocabulary_counted: every such word a small reach's rows hold)."""
    if len(_queries) + len(stems) > WORDS_KEPT:
        _queries.clear()
    _queries.update({word: ((word,), (stem,)) if stem else ((word,),) for word, stem in stems.items()})


@functools.lru_cache(maxsize=4096)
def _items(query: WordQuery) -> tuple[str, ...]:
    """The query's distinct lexemes in the order calc_rank_or takes them (SortAndUniqItems: by their bytes)."""
    # By UTF-8 bytes, as PostgreSQL compares them (the same order as code points, said the way tsrank.c says it).
    return tuple(sorted({lexeme for conjunction in query for lexeme in conjunction}, key=str.encode))


@functools.lru_cache(maxsize=65_536)
def _share(positions: str) -> tuple[float, int]:
    """One lexeme's addend to calc_rank_or's sum (tsrank.c, in its float steps) and its number of positions, from its
    positions as a tsvector's text writes them ("3A,5,9": A, D, D; "": none, which counts once at weight D)."""
    total, heaviest, at = 0.0, -1.0, 0
    letters = _DIGITS.sub("", positions).split(",")
    for j, letter in enumerate(letters):
        weight = _WEIGHTS[letter or "D"]
        total = _f32(total + _f32(weight / ((j + 1) * (j + 1))))
        if weight > heaviest:
            heaviest, at = weight, j
    return _f32(_f32(heaviest + total) - _f32(heaviest / ((at + 1) * (at + 1)))) / _ZETA_2, len(letters)


@dataclass(frozen=True)
class HeldWords:
    """The words of a copy's rows (by their position in the copy): which rows hold each lexeme, with its share, and
    each row's length divisor."""

    postings: dict[str, tuple[list[int], list[float]]]  # lexeme -> (its rows, their shares)
    divisors: np.ndarray  # each row's length divisor log2(1 + positions) (float64)
    nbytes: int  # roughly what they take in memory (for the process's bound on copies): ~100 bytes a (row, lexeme)

    @classmethod
    def read(cls, texts: list[str | None]) -> HeldWords | None:
        """From each row's search_vector as text; None where a lexeme holds a quote or a backslash (the parser makes
        none from words; a tsvector's text doubles them): such a reach's keyword leg runs its statement."""
        postings: dict[str, tuple[list[int], list[float]]] = {}
        divisors = []
        for row, text in enumerate(texts):
            text = text or ""
            if "''" in text or "\\" in text:
                return None
            length = 0
            for lexeme, positions in _ENTRY.findall(text):
                share, count = _share(positions)
                rows, shares = postings.setdefault(lexeme, ([], []))
                rows.append(row)
                shares.append(share)
                length += count
            # tsrank.c's cnt_length (a lexeme without positions counts once), log2 of it + 1 in double, as C's log
            divisors.append(math.log(length + 1) / math.log(2.0))
        entries = sum(len(rows) for rows, _ in postings.values())
        return cls(postings, np.array(divisors, dtype=np.float64), 100 * entries + 120 * len(postings) + 8 * len(texts))

    def _holding(self, lexeme: str) -> np.ndarray:
        mask = np.zeros(len(self.divisors), dtype=bool)
        mask[self.postings.get(lexeme, ([], []))[0]] = True
        return mask

    def scored(self, query: WordQuery) -> tuple[np.ndarray, np.ndarray]:
        """Which rows `@@` the query (holding every lexeme of one of its conjunctions), and every row's
        ts_rank(row, query, 1): calc_rank_or over the query's distinct lexemes, then the length divisor, each step
        rounded to a float as tsrank.c's are (float64 arrays holding float32 values)."""
        matching = np.zeros(len(self.divisors), dtype=bool)
        for conjunction in query:
            matching |= np.logical_and.reduce([self._holding(lexeme) for lexeme in conjunction])
        lexemes = _items(query)
        total = np.zeros(len(self.divisors), dtype=np.float32)
        for lexeme in lexemes:
            rows, shares = self.postings.get(lexeme, ([], []))
            total[rows] = (total[rows].astype(np.float64) + shares).astype(np.float32)
        total = (total.astype(np.float64) / len(lexemes)).astype(np.float32)
        with np.errstate(invalid="ignore", divide="ignore"):  # a row without words: it matches nothing
            ranks = (total.astype(np.float64) / self.divisors).astype(np.float32)
        return matching, ranks.astype(np.float64)

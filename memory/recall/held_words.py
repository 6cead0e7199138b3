"""The keyword leg of a small reach, from the words of its rows held in this process (memory.recall.held_vectors).

The keyword statement (memory.recall.legs) scores each candidate Σ idf(word) · ts_rank(search_vector, word's query, 1)
in PostgreSQL: about 2 ms of a small memory's search, with PostgreSQL's work beside the query's embedding on the same
two cores. The copy of a reach that holds its vectors also holds each row's words as PostgreSQL indexed them (its
`search_vector`, read as text), so the same levels are picked and scored here, to the same bits:

- **A word's query** is what PostgreSQL makes of it (corpora.WORD_QUERY, as text), asked once per process and word,
  and read as a disjunction of conjunctions of lexemes. Only such queries are scored here; any other shape (a
  conjunction alone, which ts_rank scores by proximity, a prefix, a phrase) sends the search to the statement.
- **A row matches** a word when it holds every lexeme of one conjunction (`@@`).
- **ts_rank** with normalisation 1 is PostgreSQL's `calc_rank_or` (tsrank.c) over the query's distinct lexemes in
  byte order, divided by log2(1 + the row's length), computed with its float4 steps: each lexeme's share is summed
  from its positions' weights (default 0.1, 0.2, 0.4, 1.0 for D, C, B, A), rounded as C rounds a float. The sum over
  a row's words is float8 in the order of the query's words, as `sum()` adds them.

A row's words are read with its vector, so a copy is as current as its vectors are.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from django.db import connection

from memory.recall.corpora import WORD_QUERY

# After a lexeme in a tsvector's text, its positions, a weight letter after each but D's ('tea':3A,5), then the next
# lexeme or the row's end.
_POSITIONS_AFTER = r"(?::([0-9A-D,]+))?(?=[ \n]|\Z)"
_DIGITS = re.compile(r"\d+")
_WEIGHTS = {letter: float(np.float32(value)) for letter, value in zip("DCBA", (0.1, 0.2, 0.4, 1.0), strict=True)}
_ZETA_2 = 1.64493406685  # tsrank.c's limit of Σ 1/i²
# A word's query as text: lexemes joined by " & " within a conjunction, conjunctions by " | ", nothing else.
_QUERY_LEXEME = re.compile(r"'((?:[^'\\]|''|\\.)*)'")
_QUERIES_OF = f"SELECT w.word, ({WORD_QUERY.format(word='w.word')})::text FROM unnest(%s::text[]) AS w(word)"  # noqa: S608
WORDS_KEPT = 50_000  # words whose query this process keeps; past it, it starts again
LEXEMES_KEPT = 20_000  # lexemes a copy keeps the rows of; past it, it starts again

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


@functools.lru_cache(maxsize=4096)
def _share(weights: str) -> tuple[float, int]:
    """One lexeme's addend to calc_rank_or's sum (tsrank.c, float steps) and its number of positions, from its
    positions as a tsvector's text writes them with the numbers left out ("A,,B": A, D, B; "": one, D)."""
    total, heaviest, at = 0.0, -1.0, 0
    letters = weights.split(",")
    for j, letter in enumerate(letters):
        weight = _WEIGHTS[letter or "D"]
        total = _f32(total + _f32(weight / ((j + 1) * (j + 1))))
        if weight > heaviest:
            heaviest, at = weight, j
    return _f32(_f32(heaviest + total) - _f32(heaviest / ((at + 1) * (at + 1)))) / _ZETA_2, len(letters)


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
    if unseen:
        with connection.cursor() as cursor:
            cursor.execute(_QUERIES_OF, [unseen])
            asked = {word: _query_read(text) for word, text in cursor.fetchall()}
        if len(_queries) + len(asked) > WORDS_KEPT:
            _queries.clear()
        _queries.update(asked)
    return {word: _queries.get(word) for word in words}


@functools.lru_cache(maxsize=4096)
def _items(query: WordQuery) -> list[str]:
    """The query's distinct lexemes in the order calc_rank_or takes them (SortAndUniqItems: by their bytes)."""
    return sorted({lexeme for conjunction in query for lexeme in conjunction}, key=str.encode)


# SQL for how many positions the row `c`'s search_vector holds (a lexeme stored without any counts once): its length
# in ts_rank's normalisation (tsrank.c's cnt_length).
POSITIONS = "(SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) FROM unnest(c.search_vector) AS u)"


@dataclass
class HeldWords:
    """The words of a copy's rows (by their position in the copy): each row's search_vector as text, one a line, read
    for a lexeme the first time a search asks for it (which rows hold it, with its share), and each row's length."""

    text: str
    starts: list[int]  # where each row's line starts in `text`
    divisors: np.ndarray  # each row's length divisor log2(1 + positions) (float64)
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # lexeme -> (its rows, int64; their shares, float64)

    @classmethod
    def read(cls, rows: list[tuple[str | None, int]]) -> HeldWords | None:
        """From each row's (search_vector as text, positions); None where a lexeme holds a quote, a backslash or a
        line break (the parser makes none of these from words): such a reach's keyword leg runs its statement."""
        texts = [text or "" for text, _ in rows]
        if any("''" in text or "\\" in text or "\n" in text for text in texts):
            return None
        starts, at = [], 0
        for text in texts:
            starts.append(at)
            at += len(text) + 1
        divisors = [math.log(length + 1) / math.log(2.0) for _, length in rows]  # as tsrank.c: C's log, in double
        return cls("\n".join(texts), starts, np.array(divisors, dtype=np.float64), {})

    @property
    def nbytes(self) -> int:
        """Roughly what the words take in memory (for the process's bound on copies)."""
        held = sum(rows.nbytes + shares.nbytes + 200 for rows, shares in list(self.postings.values()))
        return len(self.text) + 8 * len(self.starts) + self.divisors.nbytes + held

    def _posting(self, lexeme: str) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding the lexeme and its share in each, read from the text the first time it is asked for (a
        search's threads may read it side by side: the same arrays)."""
        found = self.postings.get(lexeme)
        if found is None:
            rows, shares = [], []
            for match in re.finditer(re.escape(f"'{lexeme}'") + _POSITIONS_AFTER, self.text):
                start = match.start()
                if start and self.text[start - 1] not in " \n":
                    continue  # the end of another lexeme ('x'' 'tea'): never, as no lexeme holds a quote
                rows.append(bisect.bisect_right(self.starts, start) - 1)
                shares.append(_share(_DIGITS.sub("", match.group(1) or ""))[0])
            found = (np.array(rows, dtype=np.int64), np.array(shares, dtype=np.float64))
            if len(self.postings) >= LEXEMES_KEPT:
                self.postings.clear()
            self.postings[lexeme] = found
        return found

    def _holding(self, lexeme: str) -> np.ndarray:
        mask = np.zeros(len(self.divisors), dtype=bool)
        mask[self._posting(lexeme)[0]] = True
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
            rows, shares = self._posting(lexeme)
            total[rows] = (total[rows].astype(np.float64) + shares).astype(np.float32)
        total = (total.astype(np.float64) / len(lexemes)).astype(np.float32)
        with np.errstate(invalid="ignore", divide="ignore"):  # a row without words: it matches nothing
            ranks = (total.astype(np.float64) / self.divisors).astype(np.float32)
        return matching, ranks.astype(np.float64)

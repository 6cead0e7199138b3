"""The SQL of the two ranking legs over each corpus (claims, chunks, node cards: memory.recall.corpora).

- Keyword: rows matching the query words as written or stemmed (`plainto_tsquery` per word, GIN), scored
  Σ idf(word) · ts_rank(row, word), where idf = ln(1 + (N - df + 0.5) / (df + 0.5)) over the rows in reach:
  BM25's weighting, so a rare name counts far more than a word every row has (N and df are counted and cached by
  memory.recall.word_statistics). Scoring costs per row, so the candidates are bounded: only words that tell rows
  apart pick them, and when those words together hold more than CANDIDATE_BUDGET rows, candidates must hold
  several of them (three, then two), the way a person with thousands of memories is found by the other words of
  the question; single words come last, rarest first.
  Each level scores at most CANDIDATE_BUDGET of its rows (the first the GIN index gives), so a level that still
  holds tens of thousands of rows costs the same as one that holds two thousand. A small reach whose rows this
  process holds (memory.recall.held_vectors) has its levels scored from them instead, to the same bits.
- Vector: cosine distance on the per-model HNSW expression index `(embedding::vector(D))`, rows of the
  active model only; `hnsw.ef_search` and an iterative scan are set for the transaction.
"""

from __future__ import annotations

import itertools
import logging
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings
from django.db import connection

from memory.models.copy_rows import vector_text
from memory.recall import word_statistics
from memory.recall.corpora import WORD_QUERY, Corpus, Span
from memory.recall.prepared import read_prepared
from memory.recall.word_statistics import statistics_counted

logger = logging.getLogger("memory.recall")

# A word held by more than this share of the rows (and more than MIN_SELECTIVE_ROWS) does not pick candidates.
SELECTIVE_SHARE = 0.05
MIN_SELECTIVE_ROWS = 200
# Rows the keyword leg is willing to score one by one; past it candidates must hold several query words, and
# no level scores more: at a million claims three common words together still hold 100,000 rows.
CANDIDATE_BUDGET = 2_000
MOST_WORDS_TOGETHER = 3  # the first level: rows holding this many of the selective words (or all, if fewer)
LEVEL_WORDS = 6  # the rarest selective words combined into levels (6 choose 3 = 20 conjunctions at most)


def _together(count: int, together: int, key: str = "") -> str:
    """A tsquery matching rows that hold at least `together` of the words %(<key>w0)s .. %(<key>w<count-1>)s: the
    OR of every such conjunction, so the GIN index intersects and unites posting lists and no other row is read."""
    words = [WORD_QUERY.format(word=f"%({key}w{n})s") for n in range(count)]
    groups = ["(" + " && ".join(group) + ")" for group in itertools.combinations(words, together)]
    return "(" + " || ".join(groups) + ")"


@dataclass(frozen=True)
class Hit:
    corpus: str
    id: str
    score: float  # keyword: Σ idf·rank; vector: cosine similarity


def _candidate_levels(selective: list[str], df: dict[str, int]) -> list[tuple[list[str], int]]:
    """The (words, how many of them together) to pick candidates with, tried in order until enough rows are
    found: all selective words at once when they hold few rows; otherwise rows holding several of the rarest,
    then the single rarest words within the budget."""
    rarest = sorted(selective, key=lambda word: (df[word], word))
    if sum(df.values()) <= CANDIDATE_BUDGET or len(rarest) == 1:
        return [(rarest, 1)]
    within: list[str] = []
    held = 0
    for word in rarest:
        if within and held + df[word] > CANDIDATE_BUDGET:
            break
        within.append(word)
        held += df[word]
    combined = rarest[:LEVEL_WORDS]
    return [(combined, together) for together in range(min(len(combined), MOST_WORDS_TOGETHER), 1, -1)] + [(within, 1)]


@dataclass
class _KeywordScan:
    """One corpus searched by keyword within one time window: its candidate levels still to try, what it found."""

    corpus: Corpus
    window: int  # which of the spans searched
    span: Span
    present: list[str]  # the query words some row in reach holds
    idf: dict[str, float]
    levels: list[tuple[list[str], int]]
    scores: dict[str, float]


def keyword_hits(
    corpus: Corpus,
    terms: list[str],
    params: dict[str, Any],
    since: datetime | None,
    limit: int,
    until: datetime | None = None,
) -> list[Hit]:
    """Rows of one corpus holding the selective query words, scored by every query word they hold."""
    return keyword_hits_within((corpus,), terms, params, [(since, until)], limit)[0]


class LevelScorer(Protocol):
    """The keyword leg's work on rows held in the process (memory.recall.held_vectors), as its statements do it."""

    def __call__(
        self, corpus: Corpus, span: Span, words: list[str], together: int, idf: dict[str, float], limit: int
    ) -> dict[str, float]:
        """One candidate level of one corpus within one time window scored: (the level's words, how many together,
        the idf of each query word a row in reach holds, in order) -> the best `limit` rows' scores by id."""
        ...

    def counted(self, corpus: Corpus, words: list[str]) -> dict[str, int]:
        """How many rows of `corpus` in reach hold each word (N under ""), uncapped (word_statistics)."""
        ...


def keyword_hits_within(
    corpora: tuple[Corpus, ...],
    terms: list[str],
    params: dict[str, Any],
    spans: list[Span],
    limit: int,
    *,
    held: LevelScorer | None = None,
) -> list[list[Hit]]:
    """Per time window, the keyword hits of every corpus (in corpus order, each corpus's best first): rows holding
    the selective query words, scored by every query word they hold. The first candidate level of every corpus
    and window goes in one statement; only those that found fewer than `limit` rows try their next level, again
    together, so a search of three corpora costs one round trip, not one per corpus and level. With `held`, the
    levels are scored from the rows this process holds instead, and no keyword statement is sent (should that fail,
    the statements run after all: a held copy is only a shortcut)."""
    counts = statistics_counted(corpora, terms, params, held=None if held is None else held.counted) if terms else {}

    def scanned() -> list[_KeywordScan]:
        return [
            scan
            for window, span in enumerate(spans)
            for corpus in corpora  # in this order: each window's hits come corpus by corpus
            if (scan := _keyword_scan(corpus, terms, counts, window, span))
        ]

    scans = scanned()
    pending = scans
    try:
        while pending and held is not None:
            for scan in pending:
                words, together = scan.levels.pop(0)
                scan.scores.update(held(scan.corpus, scan.span, words, together, scan.idf, limit))
            pending = [scan for scan in pending if len(scan.scores) < limit and scan.levels]
    except Exception:
        logger.exception("recall.keyword_not_held")
        scans = pending = scanned()
    while pending:
        parts, values = [], dict(params)
        for number, scan in enumerate(pending):
            words, together = scan.levels.pop(0)
            parts.append(_level_sql(number, scan, words, together, limit, values))
        with connection.cursor() as cursor:
            cursor.execute(" UNION ALL ".join(parts), values)
            for number, row_id, score in cursor.fetchall():
                pending[number].scores[row_id] = float(score or 0)
        pending = [scan for scan in pending if len(scan.scores) < limit and scan.levels]
    found: list[list[Hit]] = [[] for _ in spans]
    for scan in scans:
        best = sorted(scan.scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
        found[scan.window] += [Hit(scan.corpus.name, row_id, score) for row_id, score in best]
    return found


def _keyword_scan(
    corpus: Corpus, terms: list[str], counts: dict[str, dict[str, int]], window: int, span: Span
) -> _KeywordScan | None:
    """What the keyword leg of `corpus` will look for within `span`: None when no row in reach holds a query word."""
    corpus_counts = counts.get(corpus.name, {})
    total = corpus_counts.get("", 0)
    present = [word for word in terms if corpus_counts.get(word, 0) > 0]
    if not present:
        return None
    df = {word: corpus_counts[word] for word in present}
    idf = {word: math.log(1 + (max(total, df[word]) - df[word] + 0.5) / (df[word] + 0.5)) for word in present}
    # Candidates come from the words that tell rows apart; a word most rows hold only adds to their score.
    # When every word is common, rows holding several of them come first (the levels below), then the rarest.
    # A word whose count stopped at DF_CAP is common whatever the share says (N stops counting too): at a
    # million claims every such word would look alike, and rows holding two of them crowd out the rare one.
    common = max(MIN_SELECTIVE_ROWS, total * SELECTIVE_SHARE)
    selective = [word for word in present if df[word] <= common and df[word] < word_statistics.DF_CAP] or present
    levels = _candidate_levels(selective, {word: df[word] for word in selective})
    return _KeywordScan(corpus=corpus, window=window, span=span, present=present, idf=idf, levels=levels, scores={})


def _level_sql(
    number: int, scan: _KeywordScan, words: list[str], together: int, limit: int, values: dict[str, Any]
) -> str:
    """One candidate level of one scan as a part of the UNION ALL, its rows tagged with `number`; its parameters
    (prefixed `k<number>_`) are added to `values`."""
    key = f"k{number}_"
    since, until = scan.span
    values |= {f"{key}w{n}": word for n, word in enumerate(words)}
    values |= {f"{key}words": scan.present, f"{key}idfs": [scan.idf[word] for word in scan.present]}
    values |= {f"since{key}": since, f"until{key}": until, f"{key}limit": limit}
    corpus = scan.corpus
    return f"""(
        WITH weighted AS MATERIALIZED (
            SELECT {WORD_QUERY.format(word="w.word")} AS q, w.idf
            FROM unnest(%({key}words)s::text[], %({key}idfs)s::float8[]) AS w(word, idf)
        ), candidates AS MATERIALIZED (
            SELECT c.id, c.search_vector FROM {corpus.table}
            WHERE {corpus.where(since, until, key)} AND c.search_vector @@ {_together(len(words), together, key)}
            LIMIT {CANDIDATE_BUDGET}
        )
        SELECT {number}, c.id, (SELECT sum(w.idf * ts_rank(c.search_vector, w.q, 1)) FROM weighted w
                                WHERE c.search_vector @@ w.q) AS score
        FROM candidates c
        ORDER BY score DESC, c.id
        LIMIT %({key}limit)s
    )"""  # noqa: S608 (fixed SQL fragments from this module; every value is a parameter)


# The scans through the index are prepared, but planned for each search's own values: a plan kept for every call
# would be chosen from whoever searched first (an owner with a million claims, or with ten, scan alike).
_VECTOR_SETTINGS = {"hnsw.iterative_scan": "relaxed_order", "plan_cache_mode": "force_custom_plan"}
# An owner with at most EXACT_ROWS rows in all three corpora (every partition and scope: what bounds any index range
# a search of theirs reads, word_statistics.owner_rows_cached) is searched exactly: the distance of each row in reach,
# sorted, which for a few hundred rows is quicker than the index (conv-26's 450: 0.30 ms against 0.42), and planned
# once per connection, as index probes by owner or partition for any such owner whatever the tables hold (a
# sequential or parallel scan is never planned: a generic plan cannot tell that the owner is small). Planning the
# index's scan was 0.3 ms of every search. The count is at most a minute old.
EXACT_ROWS = 1_000  # at most CANDIDATE_BUDGET: a copy held of such a reach scores every candidate (held_vectors)
_EXACT_SETTINGS = {
    "plan_cache_mode": "force_generic_plan",
    "enable_seqscan": "off",
    "max_parallel_workers_per_gather": "0",
}


def searched_exactly(corpora: tuple[Corpus, ...], params: dict[str, Any]) -> bool:
    """Whether the vector leg reads every row in reach rather than the HNSW index: the owner is known, from the
    cached count of their rows in each corpus (read ahead within a search), to hold at most EXACT_ROWS rows."""
    totals = word_statistics.owner_rows_cached(corpora, params["owner"])
    return totals is not None and sum(totals.values()) <= EXACT_ROWS


def vector_hits(
    corpora: tuple[Corpus, ...],
    vector: list[float],
    model_id: str,
    params: dict[str, Any],
    since: datetime | None,
    limit: int,
    until: datetime | None = None,
) -> list[Hit]:
    """The nearest rows of each corpus within one time window, in one statement."""
    return vector_hits_within(corpora, vector, model_id, params, [(since, until)], limit)[0]


def vector_hits_within(
    corpora: tuple[Corpus, ...],
    vector: list[float],
    model_id: str,
    params: dict[str, Any],
    spans: list[Span],
    limit: int,
    *,
    exact: bool = False,
) -> list[list[Hit]]:
    """Per time window, the nearest rows of each corpus, in one statement (a UNION ALL of one scan per corpus and
    window): through the HNSW index, or `exact`ly (`searched_exactly`)."""
    dimensions = len(vector)
    values = params | {"vector": vector_text(vector), "model": model_id, "limit": limit}
    distance = f"(c.embedding::vector({dimensions})) <=> %(vector)s::vector({dimensions})"
    if exact:
        distance = f"({distance}) + 0"  # not the index's expression: every row in reach, sorted
    scans = []
    for number, (since, until) in enumerate(spans):
        values |= {f"since{number}": since, f"until{number}": until}
        scans += [
            f"""(SELECT {number} AS span, '{corpus.name}' AS corpus, c.id, {distance} AS distance
                 FROM {corpus.table}
                 WHERE {corpus.where(since, until, str(number))} AND c.embedding_model = %(model)s
                 ORDER BY distance
                 LIMIT %(limit)s)"""  # noqa: S608 (fixed SQL fragments; every value is a parameter)
            for corpus in corpora
        ]
    # The settings and the scans in one round trip, prepared (memory.recall.prepared).
    (rows,) = read_prepared(
        [(" UNION ALL ".join(scans), values)],
        settings=_EXACT_SETTINGS if exact else {"hnsw.ef_search": str(settings.SEARCH_EF_SEARCH), **_VECTOR_SETTINGS},
    )
    # Below the floor a "nearest" row is not related at all; it would only fill the answer.
    floor = settings.SEARCH_MIN_SIMILARITY
    found: list[list[Hit]] = [[] for _ in spans]
    for row in rows:
        if 1 - row["distance"] >= floor:
            found[row["span"]].append(Hit(row["corpus"], row["id"], 1 - row["distance"]))
    return found

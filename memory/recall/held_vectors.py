"""A small reach's rows held in this process, so that the legs of its searches ask PostgreSQL nothing.

An owner with at most EXACT_ROWS rows in all three corpora is searched exactly (memory.recall.legs.searched_exactly):
the distance of every row in reach, sorted. That statement, and the keyword leg's, are round trips and PostgreSQL's
work beside the query's embedding on the same cores (the vector statement 0.8 ms alone, 1.7 in a search on two cores;
the keyword statement ~2-3 ms in a search, and counting a word new to the reach ~1.5 ms); the same products over the
reach's few hundred vectors in numpy take ~0.15 ms, the keyword leg's scores from the rows' words
(memory.recall.held_words) ~0.5 ms, and a new word's rows are counted from them too. So the first search of
such a reach hands a copy of its rows to the HOLDING thread, and the searches after it rank this copy, as long as it
is current:

- **What a copy holds:** every row in reach (`Corpus.reach`: what word statistics count), each with whether the
  corpus's narrowing keeps it for a search (a claim lapsed when the copy was read, or about a node type left out, is
  counted and never found), its vector of the active model (none: never near), its words (its search_vector, read as
  text and parsed: which rows hold each lexeme, with its share of a rank, and each row's length), the time it is
  "from" and, for a claim, when it lapses by time alone (`Corpus.lapses`; a pinned claim never does); and every row's
  result as a search reads it (memory.recall.results.rows_held: a claim with its evidence and subject, a chunk with
  its source, a node card with its task's status and newest evidence, each with its partition's key), so a search
  whose candidates are all held reads nothing. A window and the moment are applied here, as the statements apply
  them (`Corpus.where`). Held per reach: owner, partitions, scope, node types left out; a copy of another model's
  vectors is read again.
- **When it is current:** it was read at the owner's memory version, erasure mark and Redis epoch a search reads now
  (all read ahead with the search's other keys). Every committed write that search reads moves the version on (a
  vector stored after its row too: memory.services.embeddings.vectors_write), an erasure sets the mark
  (memory.recall.caching), and a Redis that lost its keys (a flush, a restart without its file) has a new epoch,
  so a version number counted again never matches a copy of the old one. Where Redis holds no version (none since
  it lost its keys: the owner's next write sets one), nothing is held. A copy is read after its rows, at a version
  no later than theirs. With Redis away, or inside a transaction (whose own writes no copy holds), the statements
  run as before. The vector products are float32 (pgvector's are its own): a vector leg's score may differ from the
  statement's in its sixth place, and a near tie, or a row right at the similarity floor, fall the other way. The
  keyword leg's scores are the statement's to the bit.
- **What it costs:** HELD_BYTES per process at most, the least recently searched copies dropped first; each at most
  EXACT_ROWS float32 vectors (1,000 x 384: 1.5 MB; x 768: 3 MB) and the rows' words (~100 bytes a lexeme of a row,
  counted: conv-26's 449 rows, 30,000 of them, ~3 MB) and its results' rows (conv-26's: ~0.6 MB counted). A write drops
  nothing here: the next search of that reach runs the statements and hands the copy on again (~40 ms of the thread's
  for conv-26, two round trips and the words' parse, off the request's path). A reach with no rows holds an empty copy:
  its searches hand nothing on.

The window between a write's commit and its version's move (the writer's next step, on its own thread, once its
transaction has committed and before it answers its caller) is the one every cache of the owner's already has (the
atlas's text too): a search that read the version ahead before the move may rank and show the rows as the copy holds
them, from before the write (a claim retired in it, say), as a search a moment earlier would have; longer only where
Redis failed to take the move but answers the search (the move is retried, config.redis_retry). An erasure leaves no
such window: from its start to its mark set after its commit no copy of the owner's is held (caching.ERASING_MARK), and
searches read the rows. A copy whose rows and results were read on either side of a write is never current: the write
moves the version on from the stamp read before both. Every writer of what a search shows says the memory changed in its
transaction (memory.services.audit.memory_changed: audited services, the pipeline's steps, reconcile and claims_erase
whoever calls them, a partition saved or deleted; reviewed writer by writer in issue 18's thirty-eighth pass).
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone
from redis.exceptions import RedisError

from memory.recall import legs
from memory.recall.caching import ERASING_MARK, cached_many, dropped_key
from memory.recall.corpora import Corpus, Span
from memory.recall.held_words import HeldWords, WordQuery, word_queries
from memory.recall.prepared import read_prepared
from memory.recall.results import HeldResults, rows_held
from memory.recall.threads import claimed, submitted
from memory.services.audit import memory_version_key

logger = logging.getLogger("memory.recall")

HOLDING = "held-vectors"  # the thread that reads the copies, one per process
HOLDING_QUEUED = 4  # copies waiting to be read at most; a search of a reach whose copy was dropped hands it on again
HELD_BYTES = 32 * 1024 * 1024  # the copies per process at most (~7 reaches the size of conv-26's, 449 rows: 4.5 MB)
EPOCH_KEY = "recall:epoch"  # a token kept without expiry: a Redis that lost its keys has a new one
_NEVER = np.iinfo(np.int64).max  # a row that does not lapse
_NO_TIME = np.iinfo(np.int64).min  # a row with no time: outside every window (SQL's NULL >= x is not true)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_GIVES_WAY = {"lock_timeout": "100ms"}


@dataclass(frozen=True)
class _Copy:
    stamp: tuple[Any, ...]  # (memory version, erasure mark, epoch) it was read at
    model_id: str  # the model of the vectors held
    rows: dict[str, np.ndarray]  # each corpus's rows (their positions)
    ids: tuple[str, ...]
    # rows x dimensions, float32, each row divided by its norm (a zero vector, or none of the model: NaN); None
    # where no row has a vector of the model
    unit: np.ndarray | None
    # each row's words, as its search_vector holds them (memory.recall.held_words); None: not held (the keyword leg
    # runs its statement)
    words: HeldWords | None
    time: np.ndarray  # microseconds since 1970 (int64; _NO_TIME where the row has none)
    # microseconds since 1970 (int64; _NEVER where it does not; _NO_TIME where the corpus's narrowing left it out
    # when it was read: a claim lapsed by then, or one about a node type left out, is in reach for the word counts
    # and never found)
    lapses: np.ndarray
    # every row's result as a search reads it (memory.recall.results.rows_held)
    results: HeldResults
    nbytes: int  # roughly what it takes in memory (for the process's bound on copies)

    def within(self, span: Span, at: datetime) -> np.ndarray:
        """Which rows are in reach at the moment `at` within the time window `span`, as the statements' filters
        (`Corpus.where`) keep them."""
        since, until = span
        within = self.lapses > _micros(at)
        if since is not None:
            within &= self.time >= _micros(since)  # _NO_TIME is below every moment
        if until is not None:
            within &= (self.time < _micros(until)) & (self.time != _NO_TIME)
        return within


_copies: OrderedDict[tuple[Any, ...], _Copy] = OrderedDict()
_lock = threading.Lock()


def _forked() -> None:
    """In a forked child: the lock is free (a thread of the parent may have held it at the fork)."""
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forked)


def keys(owner_id: int) -> list[str]:
    """The cache keys a copy of this owner's is checked against (a search reads them ahead)."""
    return [memory_version_key(owner_id), dropped_key(owner_id), EPOCH_KEY]


def _reach(corpora: tuple[Corpus, ...], params: dict[str, Any]) -> tuple[Any, ...]:
    return (
        tuple(corpus.name for corpus in corpora),
        params["owner"],
        tuple(sorted(params["partitions"])),
        params["scope"],
        tuple(sorted(params["excluded"])),
    )


def _stamp_now(owner_id: int) -> tuple[Any, ...]:
    """(version, mark, epoch) as Redis holds them now, in one round trip (within a search: as read ahead; None for
    each Redis did not say or holds none of)."""
    held = cached_many(keys(owner_id))
    return tuple(held.get(key) for key in keys(owner_id))


def _current(corpora: tuple[Corpus, ...], params: dict[str, Any]) -> tuple[_Copy | None, bool]:
    """The reach's copy where this process holds a current one, and whether one could be held at all (no: inside a
    transaction, held copies turned off, Redis holds no version or did not answer)."""
    if not settings.SEARCH_HELD_VECTORS or connection.in_atomic_block:
        return None, False
    stamp = _stamp_now(params["owner"])
    if stamp[0] is None:
        return None, False  # no version to hold a copy at: none since Redis lost its keys, or Redis did not answer
    reach = _reach(corpora, params)
    with _lock:
        copy = _copies.get(reach)
        if copy is None or copy.stamp != stamp:
            return None, True
        _copies.move_to_end(reach)
        return copy, True


def _erasing(stamp: tuple[Any, ...]) -> bool:
    return isinstance(stamp[1], str) and stamp[1].startswith(ERASING_MARK)


def nearest_within(
    corpora: tuple[Corpus, ...],
    vector: list[float],
    model_id: str,
    params: dict[str, Any],
    spans: list[Span],
    limit: int,
    *,
    at: datetime | None = None,
) -> list[list[legs.Hit]] | None:
    """What `legs.vector_hits_within(..., exact=True)` finds, from this process's copy of the reach: per time window,
    the nearest rows of each corpus (similarity at least SEARCH_MIN_SIMILARITY), nearest first, as of the moment
    `at` (now). None where no current copy is held: the caller runs the statement, and the copy is handed on to be
    read for the searches after it."""
    copy, holdable = _current(corpora, params)
    if copy is None or copy.model_id != model_id:
        if holdable:
            _handed_on(corpora, model_id, params)  # where Redis holds no epoch, the thread sets one
        return None
    return _ranked(copy, corpora, vector, spans, limit, at or timezone.now())


def _ranked(
    copy: _Copy, corpora: tuple[Corpus, ...], vector: list[float], spans: list[Span], limit: int, at: datetime
) -> list[list[legs.Hit]]:
    if copy.unit is None:
        return [[] for _ in spans]
    query = np.asarray(vector, dtype=np.float32)
    similarity = copy.unit @ (query / np.linalg.norm(query))
    # A NaN (a zero vector, a row without one) is never near: the statement sorts it last, and below any floor.
    near = similarity >= settings.SEARCH_MIN_SIMILARITY
    found: list[list[legs.Hit]] = []
    for span in spans:
        within = copy.within(span, at) & near
        hits = []
        for corpus in corpora:
            rows = copy.rows[corpus.name]
            rows = rows[within[rows]]
            nearest = rows[np.argsort(-similarity[rows], kind="stable")[:limit]].tolist()
            scores = similarity[nearest].tolist()
            hits += [legs.Hit(corpus.name, copy.ids[row], score) for row, score in zip(nearest, scores, strict=True)]
        found.append(hits)
    return found


def results_held(corpora: tuple[Corpus, ...], params: dict[str, Any]) -> HeldResults | None:
    """The rows of every result in reach as this process's current copy of the reach holds them, to build the
    results from (results.hydrated); None where no current copy is held."""
    copy, _ = _current(corpora, params)
    return None if copy is None else copy.results


def keyword_scorer(
    corpora: tuple[Corpus, ...], terms: list[str], params: dict[str, Any], *, at: datetime | None = None
) -> legs.LevelScorer | None:
    """What scores the keyword leg's candidate levels from this process's copy of the reach, as the statement scores
    them (memory.recall.held_words), as of the moment `at` (now); None where no current copy is held, or a query
    word's query is not one it scores: the leg runs its statement (a copy is handed on by the vector leg)."""
    copy, _ = _current(corpora, params)
    if copy is None or copy.words is None:
        return None
    queries = word_queries(terms)
    if any(query is None for query in queries.values()):
        return None
    return _LevelsScored(
        copy, copy.words, {word: query for word, query in queries.items() if query}, at or timezone.now()
    )


@dataclass
class _LevelsScored:
    """The keyword leg's levels of one search, scored from a copy (legs.LevelScorer)."""

    copy: _Copy
    words: HeldWords
    queries: dict[str, WordQuery]
    at: datetime
    scored: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # rows holding each, their ranks
    spans: dict[Span, np.ndarray] = field(default_factory=dict)

    def _scored(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        if word not in self.scored:
            self.scored[word] = self.words.scored(self.queries[word])
        return self.scored[word]

    def __call__(
        self, corpus: Corpus, span: Span, words: list[str], together: int, idf: dict[str, float], limit: int
    ) -> dict[str, float]:
        if span not in self.spans:
            self.spans[span] = self.copy.within(span, self.at)
        rows = self.copy.rows[corpus.name]
        held = sum(self._scored(word)[0][rows].astype(np.int64) for word in words)
        rows = rows[(held >= together) & self.spans[span][rows]]
        # Σ idf · ts_rank over the words a row holds, in the order of idf (as sum() adds them; + 0.0 changes nothing)
        scores = np.zeros(len(rows), dtype=np.float64)
        for word, weight in idf.items():
            holding, ranks = self._scored(word)
            scores += np.where(holding[rows], weight * ranks[rows], 0.0)
        ids = [self.copy.ids[row] for row in rows.tolist()]
        return dict(sorted(zip(ids, scores.tolist(), strict=True), key=lambda item: (-item[1], item[0]))[:limit])

    def counted(self, corpus: Corpus, words: list[str]) -> dict[str, int]:
        """How many rows of `corpus` in reach hold each word (N under ""), as word_statistics' statement counts them
        (uncapped): every row in reach, whatever a search leaves out of it."""
        rows = self.copy.rows[corpus.name]
        return {word: int(self._scored(word)[0][rows].sum()) if word else len(rows) for word in words}


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // datetime.resolution  # whole microseconds since 1970


def _handed_on(corpora: tuple[Corpus, ...], model_id: str, params: dict[str, Any]) -> None:
    """The reach's copy read by the HOLDING thread once no search is in flight, once per reach in this process."""
    reach = _reach(corpora, params)
    name = repr(reach)
    if claimed(HOLDING, {name}):
        submitted(
            HOLDING, HOLDING_QUEUED, _held, corpora, model_id, dict(params), reach,
            after_searches=True, holding={name}, drops_logged=False,
        )  # fmt: skip


def _held(corpora: tuple[Corpus, ...], model_id: str, params: dict[str, Any], reach: tuple[Any, ...]) -> None:
    try:
        copy = _read(corpora, model_id, params)
        if copy is not None:
            with _lock:
                _copies[reach] = copy
                _copies.move_to_end(reach)
                while sum(held.nbytes for held in _copies.values()) > HELD_BYTES and len(_copies) > 1:
                    _copies.popitem(last=False)
    except RedisError:
        return  # Redis is away (its epoch not set): searches run the statement until it answers
    except Exception:  # a copy is only a shortcut: searches go on running the statement
        logger.exception("recall.vectors_not_held")
    finally:
        connection.close()  # this thread's connection: back to the pool, or closed (a worker, a test)


def _read(corpora: tuple[Corpus, ...], model_id: str, params: dict[str, Any]) -> _Copy | None:
    """The reach's rows with their vectors of the model, their words and their results, stamped with what Redis held
    before they were read; None where the reach holds more than EXACT_ROWS rows (its searches use the index), Redis
    holds no version, or an erasure is under way."""
    cache.add(EPOCH_KEY, secrets.token_hex(8), timeout=None)  # a new epoch where Redis lost the last one
    stamp = _stamp_now(params["owner"])  # this thread reads nothing ahead: Redis as it is now
    if stamp[0] is None or stamp[2] is None or _erasing(stamp):
        return None  # deleted meanwhile (an account's erasure, a Redis that lost its keys), or an erasure under way
    parts = [
        f"""(SELECT {number} AS corpus, c.id,
                    CASE WHEN c.embedding_model = %(model)s THEN vector_send(c.embedding) END AS vector,
                    c.search_vector::text AS words, {corpus.time} AS time, {corpus.lapses} AS lapses,
                    ({corpus.narrowing}) AS narrowed
             FROM {corpus.table}
             WHERE {corpus.reach}
             LIMIT {legs.EXACT_ROWS + 1})"""  # noqa: S608 (fixed SQL fragments; every value is a parameter)
        for number, corpus in enumerate(corpora)
    ]
    # A copy is only a shortcut: behind a lock (a migration, a table emptied) it gives up rather than wait.
    (rows,) = read_prepared([(" UNION ALL ".join(parts), params | {"model": model_id})], settings=_GIVES_WAY)
    if len(rows) > legs.EXACT_ROWS:
        return None
    corpus_of = np.array([row["corpus"] for row in rows], dtype=np.int64)
    # Every row's result, as a search reads it, in a second round trip: a write committed since the stamp was read
    # moves the version on from it, whichever of the two reads it came before.
    ids = {corpus.name: [row["id"] for row in rows if row["corpus"] == number] for number, corpus in enumerate(corpora)}
    results = rows_held(ids, _GIVES_WAY)
    unit = _unit([row["vector"] for row in rows])
    words = HeldWords.read([row["words"] for row in rows])
    return _Copy(
        stamp=stamp,
        model_id=model_id,
        rows={corpus.name: np.flatnonzero(corpus_of == number) for number, corpus in enumerate(corpora)},
        ids=tuple(row["id"] for row in rows),
        unit=unit,
        words=words,
        time=np.array([_NO_TIME if row["time"] is None else _micros(row["time"]) for row in rows], dtype=np.int64),
        lapses=np.array([_lapses(row) for row in rows], dtype=np.int64),
        results=results,
        nbytes=(0 if unit is None else unit.nbytes) + (0 if words is None else words.nbytes) + _size(results),
    )


def _lapses(row: dict[str, Any]) -> int:
    if not row["narrowed"]:
        return _NO_TIME  # out of every search, for good: nothing but a write brings it back, and it moves the version
    return _NEVER if row["lapses"] is None else _micros(row["lapses"])


def _size(results: HeldResults) -> int:
    """Roughly what results' rows take in memory: a row's dict, and its texts."""
    rows = [row for held in results.values() for parts in held.values() for found in parts for row in found]
    return sum(1_000 + sum(len(value.encode()) for value in row.values() if isinstance(value, str)) for row in rows)


def _unit(vectors: list[bytes | None]) -> np.ndarray | None:
    """The rows' vectors (pgvector's binary form) divided by their norms; a row without one, NaN. None where no row
    has one."""
    # pgvector's binary form: the dimensions (int16), an unused int16, then each value as a big-endian float32.
    known = [np.frombuffer(vector, dtype=">f4", offset=4) for vector in vectors if vector is not None]
    if not known:
        return None
    unit = np.full((len(vectors), len(known[0])), np.nan, dtype=np.float32)
    unit[[row for row, vector in enumerate(vectors) if vector is not None]] = known
    with np.errstate(divide="ignore", invalid="ignore"):
        return unit / np.linalg.norm(unit, axis=1, keepdims=True)


def forget_all() -> None:
    """Drops every copy this process holds (tests)."""
    with _lock:
        _copies.clear()

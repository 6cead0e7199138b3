"""How many rows in reach a search's words are held by: N and each word's df per corpus, for the keyword leg's
weights (memory.recall.legs), cached per reach; on a large memory, counted again off the search's path (below).

A word is counted the first time a search asks it. On a small memory nearly every question brings a word not asked
before, and counting it was a third of a first search (docs/benchmarks.md, issue 18, fifteenth pass). So where
every corpus in reach holds at most VOCABULARY_ROWS rows, the first search that counts a new word also has a
thread count every word those rows hold, in one statement, into the same cache keys: the questions after it ask
the database nothing about words held anywhere in reach. The counts are the per-word statement's own (a row holds
the word as written or its English stem; the same cap), so a search ranks the same whichever counted. A word held
nowhere, or one held only by its stem ("camped"), or one the parser cuts into several ("re-painted"), is still
counted when it is asked (from the reach's rows this process holds, memory.recall.held_vectors, where it holds them:
no statement); the search hands what it counted to that thread to keep, so its own answer waits for no
Redis write (two round trips and the vocabulary's guard were 0.5 ms of such a search). The vocabulary is counted
once no search runs in the process; what a search counted is handed on to be kept at once, ahead of any count again
it hands on. A count made on a search's path is kept STATS_SECONDS; the vocabulary's are kept QUIET_SECONDS (an hour),
its 0s too, with the owner's memory version they were counted at: they weigh words for that hour while nothing is
written (a question an hour after the last counts nothing), and after a write only as `_weighed` says (its 0s
never). The corpora holding a word in no row are kept as long, at their memory version (`_zero_keys`), so a word the
memory does not hold is not counted again until a write.

Where a corpus in reach holds more than VOCABULARY_ROWS rows the counts are dear (100,000 claims: a common word's
df up to ~6 ms, N 3.7 ms from the reach's index alone, 62 ms where every row was read), and a count out of date only
weighs a word a little wrong. There a count of rows held (N, or a word's df above 0) is kept KEPT_SECONDS, and a mark
per word (N's: "") is held STATS_SECONDS from its count in every corpus: a search that finds a word's counts held
and its mark gone weighs it by the counts it has and hands the word to the thread to count again, once no search
runs in the process (memory.recall.threads: the count does not share the cores with that search). Such a search
counts on its path only what is not cached: a word new to the reach or not asked in a day, a count of 0 (below),
and everything after an erasure. Elsewhere counting is cheap, and counts are kept unmarked (above).

Where a corpus in reach holds more than ESTIMATED_ROWS rows (N as cached, or counted first on a reach's first
search: `_rows_in_reach_first`, unless the reach's size as last counted, kept a day, says it is smaller), and at
least half its table's, even a new word is not counted there on the search's
path if PostgreSQL's planner knows it (its statistics of the search vectors hold the word's lexeme, as they do the
common, dear ones): the search weighs it by the planner's estimate of its rows in reach (one EXPLAIN a search) and
hands it to the thread to count once the search has ended; until then, a word the planner knows from rows out of
reach is weighed as if a few rows in reach held it. A word the planner does not know is rare or held nowhere, and
counted on the path: cheap, and whether a corpus holds it at all decides whether the keyword leg looks for it there.

A count of 0 made on a search's path is kept for ABSENT_SECONDS only, and counted again on the search's path: until
it is, the keyword leg does not look for it in that corpus at all, and the next turn may bring it (a 0 read at the
memory version there still is, the vocabulary's or `_zero_keys`', is as good as counted). So is an N of 0 (an empty
reach about to be written to). The cache keys carry a digest of the word keyed by this installation's secret
(memory.recall.caching.digests), not the word.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.db import DatabaseError, connection
from redis.exceptions import RedisError

from memory.recall.caching import (
    KEEPER,
    KEEPER_QUEUED,
    VERSIONED_SECONDS,
    added_many,
    at_version,
    cached_many,
    digests,
    dropped_key,
    erasure_mark,
    held_at,
    keep_many,
    kept_by_keeper,
    kept_unless_erased,
    memory_version_now,
    noted,
    owner_key,
    reach_key,
)
from memory.recall.corpora import WORD_QUERY, Corpus
from memory.recall.held_words import queries_known
from memory.recall.terms import STOPWORDS
from memory.recall.threads import claimed, submitted
from memory.services.audit import memory_version_key

logger = logging.getLogger("memory.recall")

# Counting a word's rows stops here: past it a word is common anyway, and counting costs time.
DF_CAP = 5_000
N_CAP = 200_000
STATS_SECONDS = 600
ABSENT_SECONDS = 60
KEPT_SECONDS = 86_400
# The most rows any corpus in reach may hold for its whole vocabulary to be counted at once (conv-26's 420 turns:
# ~90 ms on a background thread), and the counts waiting for the thread at most (past it: word by word).
VOCABULARY_ROWS = 2_000
VOCABULARY_QUEUED = KEEPER_QUEUED
VOCABULARY = KEEPER  # the thread (memory.recall.threads) that counts a reach's vocabulary and keeps counts
RECOUNTS_QUEUED = VOCABULARY_QUEUED // 2  # a count again is handed to that thread only while less work waits there
# A small reach's vocabulary, counted at the memory version there still is (nothing written since), weighs words for
# QUIET_SECONDS: a question an hour after the last in a quiet memory counts nothing (its counts held no longer than the
# vocabulary's guard, it spent ~2 ms of its ~7 counting again; docs/benchmarks.md, issue 18, twenty-fourth pass).
QUIET_SECONDS = VERSIONED_SECONDS
# In every count's key: changed when what a count key holds, or how it is read, changes, so that processes of the code
# before and after, sharing Redis during an upgrade, read none of each other's (v2: a small reach's vocabulary kept an
# hour, read at its memory version). Not a number alone: an owner's id in a key pattern must never match it.
COUNTS_FORMAT = "v2"
# The rows an owner holds in each corpus, in every partition and scope, counted up to OWNER_ROWS with a search's words
# and kept an hour with the memory version they were counted at (a minute, counted inside a transaction): a bound on
# the rows any index range of the owner's searches covers, whatever the reach (memory.recall.legs.searched_exactly),
# read only while no write has changed the memory since.
OWNER_ROWS = 5_000
# Past this many rows in reach (N) in a corpus, counting a word's rows there costs a search more than the planner's
# estimate of them (100,000 claims: 2.8 ms a word, p50, up to 48; 1,000,000: 23, up to 87; the estimate 0.2-0.3 ms):
# a word whose count is not held there is weighed by that estimate and counted on the thread.
ESTIMATED_ROWS = 50_000


def _stats_keys(corpora: tuple[Corpus, ...], words: list[str], params: dict[str, Any]) -> dict[tuple[str, str], str]:
    """The cache key of each (corpus, word): the reach's part made once per corpus, the word's digest once."""
    found = digests(words)
    prefixes = {corpus.name: f"{reach_key(f'df:{corpus.name}', params)}:{COUNTS_FORMAT}" for corpus in corpora}
    return {(name, word): f"{prefix}:{digest}" for name, prefix in prefixes.items() for word, digest in found.items()}


def _corpora_key(kind: str, corpora: tuple[Corpus, ...], params: dict[str, Any]) -> str:
    return f"{reach_key(kind, params)}:{'+'.join(corpus.name for corpus in corpora)}"


def _fresh_keys(corpora: tuple[Corpus, ...], words: list[str], params: dict[str, Any]) -> dict[str, str]:
    """The key of each word (N's: "") held STATS_SECONDS from its count in these corpora: its counts are fresh."""
    prefix = _corpora_key("df:fresh", corpora, params)
    return {word: f"{prefix}:{digest}" for word, digest in digests(words).items()}


def _zero_keys(corpora: tuple[Corpus, ...], words: list[str], params: dict[str, Any]) -> dict[str, str]:
    """The key of each word (not N's) naming the corpora no row in reach holds it in, kept QUIET_SECONDS at the memory
    version it was counted at: a word the memory does not hold is not counted again while nothing is written (a 0 is
    otherwise kept ABSENT_SECONDS only, as the next turn may bring the word)."""
    prefix = _corpora_key("df:zero", corpora, params)
    return {word: f"{prefix}:{digest}" for word, digest in digests(words).items() if word}


def _size_key(corpora: tuple[Corpus, ...], params: dict[str, Any]) -> str:
    """The key of the most rows in reach of any of these corpora (N) as last counted, kept KEPT_SECONDS: where it is
    at most ESTIMATED_ROWS, a search that finds N gone counts it with the words (`_rows_in_reach_first`)."""
    return _corpora_key("df:size", corpora, params)


def _sized(corpora: tuple[Corpus, ...], params: dict[str, Any], totals: dict[str, int]) -> dict[str, int]:
    """The reach's size to keep, from N of each corpus as just counted."""
    return {_size_key(corpora, params): max(totals.values(), default=0)}


def _owner_keys(corpora: tuple[Corpus, ...], owner_id: int) -> dict[str, str]:
    """The cache key of the owner's rows in each corpus, kept at the memory version they were counted at (an erasure
    drops it with the counts)."""
    return {corpus.name: owner_key(f"df:owned:{corpus.name}", owner_id) for corpus in corpora}


def _counted_key(corpora: tuple[Corpus, ...], params: dict[str, Any]) -> str:
    """The key a small reach's vocabulary count holds for QUIET_SECONDS, at the memory version it was counted at."""
    return _corpora_key("df:counted", corpora, params)


def _quiet(corpora: tuple[Corpus, ...], params: dict[str, Any]) -> bool:
    """Whether the reach's vocabulary was counted at the memory version there is now (within QUIET_SECONDS): its
    counts are the rows' as they are (within a search: as read ahead)."""
    key = _counted_key(corpora, params)
    return key in held_at([key], memory_version_now(params["owner"]))


def _counted_totals(corpora: tuple[Corpus, ...], params: dict[str, Any], cap: int) -> dict[str, int]:
    """N of each corpus, counted up to `cap`, in one statement."""
    scans = [_rows_counted(corpus, "''", corpus.reach, cap) for corpus in corpora]
    return {name: count for name, _, count in _fetched(scans, params)}


def _scans(corpus: Corpus, number: int, words: list[str], values: dict[str, Any]) -> list[str]:
    """The statements that count N (the word "") and these words' df in `corpus`, their parameters added to
    `values` (`number`: the corpus's place in a statement of several)."""
    scans = [_rows_counted(corpus, "''", corpus.reach, N_CAP)] if "" in words else []
    if terms := [word for word in words if word]:
        # One bounded lookup per word (a LATERAL subquery per unnested word). Each word's tsquery is made once,
        # behind OFFSET 0: inlined, PostgreSQL made it again for every row it matched (a cold question's counts
        # on 419 chunks: 7.1 -> 3.6 ms; docs/benchmarks.md, issue 18, twelfth pass).
        values[f"terms{number}"] = terms
        scans.append(
            f"""SELECT '{corpus.name}', t.word, m.rows
            FROM (
                SELECT w.word, {WORD_QUERY.format(word="w.word")} AS q
                FROM unnest(%(terms{number})s::text[]) AS w(word) OFFSET 0
            ) t, LATERAL (
                SELECT count(*) AS rows FROM (
                    SELECT 1 FROM {corpus.table} WHERE {corpus.reach} AND c.search_vector @@ t.q LIMIT {DF_CAP}
                ) matched
            ) m"""  # noqa: S608 (fixed SQL fragments from this module; every value is a parameter)
        )
    return scans


def _fetched(scans: list[str], values: dict[str, Any]) -> list[tuple[str, str | None, int]]:
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(f"({scan})" for scan in scans), values)
        return cursor.fetchall()


def _dear(totals: dict[str, int]) -> bool:
    """Whether a reach's counts are dear (N of each corpus as counted): some corpus holds more than VOCABULARY_ROWS
    rows in reach. There a count of rows held is kept KEPT_SECONDS, marked fresh per word; elsewhere counting is cheap
    and counts are kept unmarked: STATS_SECONDS, or as long as its vocabulary where they were counted at its memory
    version."""
    return max(totals.values(), default=0) > VOCABULARY_ROWS


@dataclass(frozen=True)
class _Counted:
    """What a count found, to keep: rows held (N and each word's df alike) by cache key, for `seconds` (a count of 0
    ABSENT_SECONDS, unless the count is a reach's vocabulary, `counted`: the key saying so, at its memory version),
    or QUIET_SECONDS where the reach's vocabulary is held at the memory version they were counted at (`quiet_at`: its
    key and that version; those of a count on a search's path, kept no shorter than the vocabulary's that vouches for
    them; and that count's 0s kept only where none is held: its vocabulary may have kept one since, for longer); the
    owner's rows, at their memory version, for `owned_seconds`; the keys marking words fresh; the corpora each word
    is held in by no row, at their memory version (`_zero_keys`); and the reach's size (`_sized`), where N was
    counted."""

    counts: dict[str, int]
    owned: dict[str, Any] = field(default_factory=dict)
    fresh: list[str] = field(default_factory=list)
    seconds: int = STATS_SECONDS
    sized: dict[str, int] = field(default_factory=dict)
    counted: dict[str, Any] = field(default_factory=dict)
    owned_seconds: int = VERSIONED_SECONDS
    quiet_at: tuple[str, Any] | None = None
    zeros: dict[str, Any] = field(default_factory=dict)

    def kept(self) -> None:
        seconds = self.seconds
        if self.quiet_at is not None and self.quiet_at[0] in held_at([self.quiet_at[0]], self.quiet_at[1]):
            seconds = QUIET_SECONDS
        held = {key: count for key, count in self.counts.items() if count or self.counted}
        keep_many(held, seconds)
        absent = {key: count for key, count in self.counts.items() if key not in held}
        if self.quiet_at is not None:
            added_many(absent, ABSENT_SECONDS)
        else:
            keep_many(absent, ABSENT_SECONDS)
        keep_many(self.owned, self.owned_seconds)
        keep_many(dict.fromkeys(self.fresh, 1), STATS_SECONDS)
        keep_many(self.sized, KEPT_SECONDS)
        keep_many(self.zeros, QUIET_SECONDS)
        keep_many(self.counted, self.seconds)  # last: the counts it vouches for are kept

    @property
    def keys(self) -> list[str]:
        return [*self.counts, *self.owned, *self.fresh, *self.sized, *self.zeros, *self.counted]


def _kept_unless_erased(counted: _Counted, owner_id: int, mark: Any) -> None:
    """Counts kept (on the vocabulary thread, or where its queue is full), unless an erasure came between."""
    kept_unless_erased(counted.kept, counted.keys, owner_id, mark)


def statistics_keys(corpora: tuple[Corpus, ...], terms: list[str], params: dict[str, Any]) -> list[str]:
    """The cache keys `statistics_counted` reads for these words in each corpus, the owner's rows, the words' marks
    of fresh counts, the reach's size, vocabulary guard and vocabulary's memory version, the owner's memory version
    and last erasure mark (a search reads them ahead)."""
    return [
        *_stats_keys(corpora, ["", *terms], params).values(),
        *_owner_keys(corpora, params["owner"]).values(),
        *_fresh_keys(corpora, ["", *terms], params).values(),
        *_zero_keys(corpora, terms, params).values(),
        _size_key(corpora, params),
        _vocabulary_guard(corpora, params),
        _counted_key(corpora, params),
        memory_version_key(params["owner"]),
        dropped_key(params["owner"]),
    ]


def owner_rows_cached(corpora: tuple[Corpus, ...], owner_id: int) -> dict[str, int] | None:
    """The owner's rows in each corpus (up to OWNER_ROWS) as cached at the memory version there is now (within a
    search: as read ahead, or as it counted them); None if any is not."""
    keys = _owner_keys(corpora, owner_id)
    cached = held_at(list(keys.values()), memory_version_now(owner_id))
    if any(key not in cached for key in keys.values()):
        return None
    return {name: int(cached[key]) for name, key in keys.items()}


def statistics_counted(
    corpora: tuple[Corpus, ...],
    terms: list[str],
    params: dict[str, Any],
    *,
    held: Callable[[Corpus, list[str]], dict[str, int]] | None = None,
) -> dict[str, dict[str, int]]:
    """N (under the word "") and each word's df in every corpus: what the cache holds, and what it does not
    counted in one statement for all the corpora (a search counts a new word's rows in its three corpora at once,
    not in a round trip each) and kept. Where counts are dear, those held but no longer fresh are used, and counted
    again on the thread; where a corpus is vast, a new word the planner knows is weighed by its estimate there
    (`_estimated`), and counted on the thread. With `held` (a small reach's rows held in the process:
    memory.recall.held_vectors), the words and N not cached are counted from them instead of the statement, and kept
    alike (N counted first where its size is not known, `_rows_in_reach_first`, is still a statement)."""
    words = ["", *terms]
    keys = _stats_keys(corpora, words, params)
    owner_keys = _owner_keys(corpora, params["owner"])
    fresh_keys = _fresh_keys(corpora, words, params)
    size_key = _size_key(corpora, params)
    cached = cached_many([*keys.values(), *fresh_keys.values(), size_key])
    owner_id = params["owner"]
    version = memory_version_now(owner_id)  # read before the rows are, as the erasure mark (within a search: ahead)
    mark = erasure_mark(owner_id)
    owned_held = held_at(list(owner_keys.values()), version)
    counts: dict[str, dict[str, int]] = {
        corpus.name: {word: int(cached[keys[corpus.name, word]]) for word in words if keys[corpus.name, word] in cached}
        for corpus in corpora
    }
    counts = _weighed(corpora, params, counts)
    zero_keys = _zero_keys(corpora, terms, params)
    zeros = held_at(list(zero_keys.values()), version)  # held by no row where they say, and nothing written since
    for term, key in zero_keys.items():
        for name in zeros.get(key, ()):
            counts[name].setdefault(term, 0)
    first = _rows_in_reach_first(corpora, terms, params, counts, cached.get(size_key))
    for name, count in first.items():
        counts[name][""] = count
    # Not a word counted within STATS_SECONDS (its mark held): the thread would not count it again so soon.
    estimated = _estimated(corpora, [word for word in terms if fresh_keys[word] not in cached], params, counts)
    handed = {word for found in estimated.values() for word in found}  # to the thread, to be counted
    scans, values, missing_in = [], dict(params), Counter[str]()
    fetched_held: list[tuple[str, str | None, int]] = []
    missing_in.update("" for _ in first)  # N counted on this path
    for number, corpus in enumerate(corpora):
        if owner_keys[corpus.name] not in owned_held:
            scans.append(_rows_counted(corpus, "NULL", "c.owner_id = %(owner)s", OWNER_ROWS))
        missing = [word for word in words if word not in counts[corpus.name]]
        counts[corpus.name] |= estimated.get(corpus.name, {})
        missing_in.update(missing)
        missing = [word for word in missing if word not in counts[corpus.name]]
        if (found := _held_counts(held, corpus, missing)) is not None:
            fetched_held += found
        else:
            scans += _scans(corpus, number, missing, values)
    fetched = [(name, "", count) for name, count in first.items()] + fetched_held
    fetched += _fetched(scans, values) if scans else []
    counted: dict[str, int] = {}
    owned: dict[str, Any] = {}
    absent: dict[str, set[str]] = {}  # the corpora counted here that hold a word in no row
    for name, word, count in fetched:
        if word is None:  # the owner's rows
            owned[owner_keys[name]] = count
        else:
            counted[keys[name, word]] = count
            counts[name][word] = int(count)
            if word and not count:
                absent.setdefault(word, set()).add(name)
    totals = {name: found[""] for name, found in counts.items()}
    sized = _sized(corpora, params, totals) if missing_in[""] else {}
    dear = _dear(totals)
    if fetched:
        owned = at_version(owned, version)
        noted(counted | owned)  # the rest of this search reads them here; Redis gets them from the thread
        # Never kept long from inside a transaction: its own rows, not yet committed, may be among those counted.
        within = connection.in_atomic_block
        owned_seconds = ABSENT_SECONDS if within else VERSIONED_SECONDS
        # With the corpora it was already known to be held in by no row, at this version.
        nowhere = {
            zero_keys[word]: tuple(sorted(names.union(zeros.get(zero_keys[word], ()))))
            for word, names in absent.items()
        }
        zeroed = {} if within else at_version(nowhere, version)
        if dear and not within:
            # A word counted here in every corpus is fresh; one counted in some (the others' counts held, or estimated
            # and handed on) is not.
            fresh = [fresh_keys[word] for word in words if missing_in[word] == len(corpora) and word not in handed]
            kept = _Counted(counted, owned, fresh, KEPT_SECONDS, sized, owned_seconds=owned_seconds, zeros=zeroed)
        else:
            # A small reach's, counted at the memory version its vocabulary was: kept as long (a count of its words
            # handed on before the vocabulary's, and kept after it, would otherwise shorten theirs).
            quiet_at = None if dear or within else (_counted_key(corpora, params), version)
            kept = _Counted(counted, owned, sized=sized, owned_seconds=owned_seconds, quiet_at=quiet_at, zeros=zeroed)
        kept_by_keeper(kept.kept, kept.keys, owner_id, mark, VOCABULARY_QUEUED)
    if dear:
        # A word held in some corpus and not marked: counted over STATS_SECONDS ago (or kept unmarked: from inside a
        # transaction, or while the reach was small). Where it was missing, a 0 had expired, and this search counted
        # it (kept above, before the count again, whose counts are the later). And the words estimated.
        stale = [
            word
            for word in words
            if word in handed or (missing_in[word] < len(corpora) and fresh_keys[word] not in cached)
        ]
        if stale:
            # This search weighs its words by the counts and estimates it has. Where the thread's queue is full, the
            # next search that asks a word estimated here estimates it again.
            counts_recounted_soon(corpora, params, stale)
    if any(word for _, word, _ in fetched):
        vocabulary_counted_soon(corpora, params, totals)
    return counts


def _held_counts(
    held: Callable[[Corpus, list[str]], dict[str, int]] | None, corpus: Corpus, words: list[str]
) -> list[tuple[str, str | None, int]] | None:
    """These words' counts in `corpus` (N: "") from the rows held, capped as the statement caps them, in the
    statement's rows' shape; None where none are held (or counting them failed: the statement counts them)."""
    if held is None or not words:
        return None
    try:
        found = held(corpus, words)
    except Exception:  # the held rows are only a shortcut
        logger.exception("recall.counts_not_held")
        return None
    return [(corpus.name, word, min(found[word], DF_CAP if word else N_CAP)) for word in words]


def _weighed(
    corpora: tuple[Corpus, ...], params: dict[str, Any], held: dict[str, dict[str, int]]
) -> dict[str, dict[str, int]]:
    """Of the counts `held`, those that may weigh a search's words (the others are counted again on its path). A
    count kept on a path lasts STATS_SECONDS at most (a 0 ABSENT_SECONDS), but a small reach's vocabulary's
    QUIET_SECONDS, its 0s too: all weigh words while no vocabulary is held at another memory version (`_quiet`: none
    counted, or nothing written since). After a write, a 0 no longer does (it says the keyword leg need not look for
    the word, and the write may have brought it), whatever the reach has grown to; the other counts do in a large
    reach (N past VOCABULARY_ROWS in some corpus, or not held: counted again off the path), and in a small one while
    its vocabulary's guard is held (counted within STATS_SECONDS, as the counts kept on a path were), then none."""
    guard, counted = _vocabulary_guard(corpora, params), _counted_key(corpora, params)
    cached = cached_many([guard, counted])
    if counted not in cached or _quiet(corpora, params):
        return held
    totals = [found.get("") for found in held.values()]
    small = all(total is not None and total <= VOCABULARY_ROWS for total in totals)
    if small and guard not in cached:
        return {name: {} for name in held}
    return {name: {word: count for word, count in found.items() if count} for name, found in held.items()}


def _rows_in_reach_first(
    corpora: tuple[Corpus, ...],
    terms: list[str],
    params: dict[str, Any],
    held: dict[str, dict[str, int]],
    size: int | None,
) -> dict[str, int]:
    """N of each corpus whose N is not held (`held`: the counts cached), counted in a statement of its own ahead of
    the words, where there are words to count: then a corpus past ESTIMATED_ROWS has its new words estimated on a
    reach's first search too, and on the first after an erasure (a million claims: a word's count 23 ms, p50).
    Nothing where the reach's `size` as last counted (`_size_key`, within a day) is at most ESTIMATED_ROWS: no word
    would be estimated, and a small reach's first search in STATS_SECONDS would pay a round trip more for nothing
    (one that grew past it since counts its words on its path, once). Nothing inside a transaction, where nothing
    is estimated: N is counted with the words."""
    unheld = tuple(corpus for corpus in corpora if "" not in held[corpus.name])
    small = size is not None and int(size) <= ESTIMATED_ROWS
    if not terms or not unheld or small or connection.in_atomic_block:
        return {}
    return _counted_totals(unheld, params, N_CAP)


def _estimated(
    corpora: tuple[Corpus, ...], terms: list[str], params: dict[str, Any], held: dict[str, dict[str, int]]
) -> dict[str, dict[str, int]]:
    """The rows each of `terms` holds, as the planner estimates them (`_planned_rows`), in each corpus whose N, as held
    (`held`: the counts cached, per corpus), is past ESTIMATED_ROWS and where its count is not held. Nothing inside a
    transaction (the thread that counts them would not see its rows), nor where the EXPLAIN fails: the search counts
    them on its path, as every other word."""
    vast = [corpus for corpus in corpora if held[corpus.name].get("", 0) > ESTIMATED_ROWS]
    asked = [word for word in terms if any(word not in held[corpus.name] for corpus in vast)]
    if not asked or connection.in_atomic_block:
        return {}
    try:
        planned = _planned_rows(vast, asked, params, {corpus.name: held[corpus.name][""] for corpus in vast})
    except DatabaseError:
        logger.exception("recall.rows_not_estimated")
        return {}
    return {
        name: {word: rows for word, rows in found.items() if word not in held[name]} for name, found in planned.items()
    }


# A word no row holds, whose estimate is the planner's for any word it has no statistics of (one lexeme, as written and
# as a stem); and the names under which `_planned_rows` holds its estimates of a table's rows and those in reach.
UNHEARD_OF = "qxzunheardofqxz"
TABLE, REACH = " table", " reach"  # no word holds a space


def _planned_rows(
    corpora: list[Corpus], words: list[str], params: dict[str, Any], totals: dict[str, int]
) -> dict[str, dict[str, int]]:
    """The rows in reach each word holds in each corpus (up to DF_CAP) as PostgreSQL's planner estimates them, in one
    EXPLAIN: the larger of its estimates for the word as written and for its stem (a row's search vector holds both
    lexemes of each of its words, so rows holding either are about those holding the stem; the planner's estimate
    for the two at once adds them), as a share of its estimate of the rows in reach, times N as counted (`totals`:
    the planner takes owner and partition for independent, and so misjudges the reach's rows; past N_CAP, where N's
    count stops, its estimate of them stands).

    Only where the planner knows the word: its estimate is above the one it makes for a word it has no statistics of
    (one that is rare or held nowhere: its count is cheap, and whether a corpus holds it at all decides whether the
    keyword leg looks for it there). And only where the rows in reach (N) are at least half the table's (as the
    planner has them): the planner's statistics are of the whole table, and would otherwise be mostly other owners'
    words. Nothing if the plan is not one scan per branch, in order."""
    branches, order, values = [], [], dict(params, unheard=UNHEARD_OF)
    for corpus in corpora:
        scan = f"SELECT 1 FROM {corpus.table}"  # noqa: S608 (fixed SQL fragments from this module; every value is a parameter)
        branches += [f"({scan})", f"({scan} WHERE {corpus.reach})"]
        order += [(corpus.name, TABLE), (corpus.name, REACH)]
        for parameter, word in [("unheard", UNHEARD_OF), *((f"word{n}", word) for n, word in enumerate(words))]:
            values[parameter] = word
            for config in ("simple", "english"):
                matched = f"c.search_vector @@ plainto_tsquery('{config}', %({parameter})s)"
                branches.append(f"({scan} WHERE {corpus.reach} AND {matched})")
                order.append((corpus.name, word))
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {' UNION ALL '.join(branches)}", values)
        (plan,) = cursor.fetchone()
    top = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]
    scans = top.get("Plans", []) if top["Node Type"] == "Append" else [top]
    if len(scans) != len(order):
        logger.warning("recall.rows_not_estimated", extra={"scans": len(scans), "expected": len(order)})
        return {}
    rows: dict[str, dict[str, float]] = {corpus.name: {} for corpus in corpora}
    for (name, word), scan in zip(order, scans, strict=True):
        rows[name][word] = max(rows[name].get(word, 0.0), float(scan["Plan Rows"]))
    # The rows in reach: N, or where N's count stopped at N_CAP, the planner's estimate (low where it misjudges).
    reach = {
        name: totals[name] if totals[name] < N_CAP else max(totals[name], found[REACH]) for name, found in rows.items()
    }
    return {
        name: {
            word: min(round(estimate / found[REACH] * reach[name]), DF_CAP)
            for word, estimate in found.items()
            if word not in (TABLE, REACH, UNHEARD_OF) and estimate > found[UNHEARD_OF]
        }
        for name, found in rows.items()
        if reach[name] * 2 >= found[TABLE]
    }


def counts_recounted_soon(corpora: tuple[Corpus, ...], params: dict[str, Any], words: list[str]) -> bool:
    """Has the vocabulary thread count these words (N's: "") again in every corpus and keep them, marked fresh;
    never from inside a transaction, whose rows the thread's connection would not see, and only while less than
    RECOUNTS_QUEUED pieces of work wait for the thread. A word already waiting in this process is not handed on
    again; the thread takes each word's mark first, so of the processes that find a word stale at once one counts
    it. Whether all of them wait."""
    if connection.in_atomic_block:
        return False
    fresh_keys = _fresh_keys(corpora, words, params)
    waiting = claimed(VOCABULARY, set(fresh_keys.values()))  # the marks of the words not waiting already
    if not waiting:
        return True
    handed = [word for word in words if fresh_keys[word] in waiting]
    return submitted(
        VOCABULARY, RECOUNTS_QUEUED, _recounted, corpora, dict(params), handed, after_searches=True, holding=waiting
    )


def _recounted(corpora: tuple[Corpus, ...], params: dict[str, Any], words: list[str]) -> None:
    try:
        fresh_keys = _fresh_keys(corpora, words, params)
        taken = [word for word in words if cache.add(fresh_keys[word], 1, STATS_SECONDS)]
        if not taken:
            return  # other processes handed them on first
        mark = erasure_mark(params["owner"])  # read before the rows are
        values = dict(params)
        fetched = _fetched(
            [scan for number, corpus in enumerate(corpora) for scan in _scans(corpus, number, taken, values)], values
        )
        keys = _stats_keys(corpora, ["", *taken], params)
        counted = {keys[name, word]: count for name, word, count in fetched if word is not None}
        held = cached_many([keys[corpus.name, ""] for corpus in corpora])  # N, where this did not count it
        totals = {
            corpus.name: int(counted.get(keys[corpus.name, ""], held.get(keys[corpus.name, ""], 0)))
            for corpus in corpora
        }
        sized = _sized(corpora, params, totals) if "" in taken else {}
        if _dear(totals):
            kept = _Counted(counted, fresh=[fresh_keys[word] for word in taken], seconds=KEPT_SECONDS, sized=sized)
        else:  # the reach is small again: as a small reach's counts
            kept = _Counted(counted, sized=sized)
        _kept_unless_erased(kept, params["owner"], mark)
    except RedisError:
        return  # Redis is away: the searches count the words again when they find none
    except Exception:  # a background count: the searches go on weighing words by the counts they have
        logger.exception("recall.counts_not_counted_again")
    finally:
        connection.close()  # this thread's connection: back to the pool, or closed (a worker, a test)


def _vocabulary_guard(corpora: tuple[Corpus, ...], params: dict[str, Any]) -> str:
    """The key a reach's vocabulary count holds for STATS_SECONDS (a search reads it ahead with its words)."""
    return _corpora_key("df:vocabulary", corpora, params)


def vocabulary_counted_soon(corpora: tuple[Corpus, ...], params: dict[str, Any], totals: dict[str, int]) -> bool:
    """Has the vocabulary thread count every word held in reach (`vocabulary_counted`) into the cache, once per
    STATS_SECONDS and reach: only where no corpus holds more than VOCABULARY_ROWS rows (`totals`: N per corpus as
    cached; the thread counts them again first), never from inside a transaction, whose rows the thread's own
    connection would not see, not while the reach's guard is held (counted, or being counted, since its words
    were last cached), nor while it is `_quiet` (its vocabulary counted at the memory version there still is), nor
    while its count waits in this process (for the searches in flight). Whether it was handed on; the thread takes
    the guard first, so of two processes that hand it on at once one counts."""
    if connection.in_atomic_block or max(totals.values(), default=0) > VOCABULARY_ROWS or _quiet(corpora, params):
        return False
    guard = _vocabulary_guard(corpora, params)
    if guard in cached_many([guard]) or not claimed(VOCABULARY, {guard}):
        return False
    return submitted(
        VOCABULARY,
        VOCABULARY_QUEUED,
        _vocabulary_counted_once,
        corpora,
        dict(params),
        guard,
        after_searches=True,
        holding={guard},
    )


def _vocabulary_counted_once(corpora: tuple[Corpus, ...], params: dict[str, Any], guard: str) -> None:
    try:
        if not cache.add(guard, 1, STATS_SECONDS):
            return  # another process handed it on first
    except RedisError:
        return
    _vocabulary_kept(corpora, params)


def _vocabulary_kept(corpora: tuple[Corpus, ...], params: dict[str, Any]) -> None:
    try:
        version = memory_version_now(params["owner"])  # read before the rows are
        mark = erasure_mark(params["owner"])
        counts = vocabulary_counted(corpora, params)  # the rows counted again: N as cached may be minutes old
        if counts is None:
            return
        # Stop words and single letters are never a search's words.
        asked = [
            word for word in counts[corpora[0].name] if word not in STOPWORDS and (len(word) > 1 or word.isdigit())
        ]
        keys = _stats_keys(corpora, ["", *asked], params)
        sized = _sized(corpora, params, {name: found[""] for name, found in counts.items()})
        counted = at_version({_counted_key(corpora, params): 1}, version)
        found = {key: counts[name][word] for (name, word), key in keys.items()}
        _kept_unless_erased(_Counted(found, seconds=QUIET_SECONDS, sized=sized, counted=counted), params["owner"], mark)
    except Exception:  # a background count: whatever failed, the searches count word by word
        logger.exception("recall.vocabulary_not_counted")
    finally:
        connection.close()  # this thread's connection: back to the pool, or closed (a worker, a test)


def vocabulary_counted(
    corpora: tuple[Corpus, ...], params: dict[str, Any], most: int | None = None
) -> dict[str, dict[str, int]] | None:
    """N (under "") and the df of every word the rows in reach hold, in each corpus: what `statistics_counted` would
    count for each of those words; None where a corpus holds more than `most` (default VOCABULARY_ROWS) rows in
    reach. A word is held as written (`simple`) or as an English stem; the words counted are those the parser leaves
    whole and stems to at most one lexeme, so that holding the word is holding one of its two lexemes (a join on
    lexemes, not a text search per word and row)."""
    most = VOCABULARY_ROWS if most is None else most
    totals = _counted_totals(corpora, params, most + 1)
    if max(totals.values(), default=0) > most:
        return None
    lexemes, counts = [], []
    for number, corpus in enumerate(corpora):
        lexemes.append(
            f"""lexemes{number} AS MATERIALIZED (
                SELECT c.id, l.lexeme FROM {corpus.table}, unnest(tsvector_to_array(c.search_vector)) AS l(lexeme)
                WHERE {corpus.reach}
            )"""  # noqa: S608 (fixed SQL fragments; every value is a parameter)
        )
        # A row holding both the word and its stem is one row: UNION makes each (word, row) once by hashing; a
        # count(DISTINCT) sorted every pair by its text instead (conv-26's chunks: 59,000 pairs, 40 of 65 ms).
        counts.append(
            f"""SELECT '{corpus.name}', m.word, least(count(*), {DF_CAP}), NULL FROM (
                SELECT w.word, l.id FROM words w JOIN lexemes{number} l ON l.lexeme = w.word
                UNION
                SELECT w.word, l.id FROM words w JOIN lexemes{number} l ON l.lexeme = w.stem
            ) m GROUP BY m.word"""  # noqa: S608 (fixed SQL fragments from this module)
        )
    every = " UNION ".join(f"SELECT lexeme FROM lexemes{number}" for number in range(len(corpora)))  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(
            f"""WITH {", ".join(lexemes)}, parsed AS MATERIALIZED (
                    SELECT v.lexeme AS word, tsvector_to_array(to_tsvector('simple', v.lexeme)) AS plain,
                           tsvector_to_array(to_tsvector('english', v.lexeme)) AS stemmed
                    FROM ({every}) v
                ), words AS MATERIALIZED (
                    SELECT word, stemmed[1] AS stem FROM parsed WHERE plain = ARRAY[word] AND cardinality(stemmed) <= 1
                )
            SELECT '', word, 0, stem FROM words UNION ALL {" UNION ALL ".join(f"({count})" for count in counts)}""",  # noqa: S608
            params,
        )
        rows = cursor.fetchall()
    stems = {word: stem for corpus, word, _, stem in rows if not corpus}
    queries_known(stems)  # each word's query is its two lexemes: a held copy scores it without asking (held_words)
    found: dict[str, dict[str, int]] = {name: {"": total} | dict.fromkeys(stems, 0) for name, total in totals.items()}
    for corpus, word, count, _ in rows:
        if corpus:
            found[corpus][word] = int(count)
    return found


def _rows_counted(corpus: Corpus, word: str, where: str, cap: int) -> str:
    """A statement of one row: the corpus's name, `word` (SQL: '' for N in reach, NULL for the owner's rows) and how
    many of its rows match `where`, counted up to `cap`."""
    return (
        f"SELECT '{corpus.name}', {word}, count(*) FROM "  # noqa: S608 (fixed SQL fragments; values are parameters)
        f"(SELECT 1 FROM {corpus.table} WHERE {where} LIMIT {int(cap)}) m"
    )

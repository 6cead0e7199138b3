"""What a search is anchored to besides its words, read from the memories in reach:

- the reference time: the newest source in reach (capped at now). Recency and "last week" count back from it,
  so an archive imported today ranks by its own timeline instead of all of it looking a year old or older;
- the people a question names who spoke in those memories: a word of the question that is a speaker's name
  ("What does Melanie do to relax?"). Questions about a person are answered by that person's own turns far
  more often than by turns that only mention them (docs/benchmarks.md, issue 17).

Both are cached per owner and reach for an hour (VERSIONED_SECONDS), with the owner's memory version they were read at
(memory.services.audit.memory_version: it changes with every write search reads, the pipeline's chunks included), and
read only while the version is the same: a search after any such change reads them anew, one in a quiet memory does not
(a search ten minutes after the last spent ~2 ms of its ~9 reading them again, with a minute's cache;
docs/benchmarks.md, issue 18, twenty-fourth pass). What a search read is kept in Redis by recall's thread, off its path,
with whatever else it kept so. The speakers are read as the set of everyone who spoke in reach (a walk of each
partition's first names in their index, one probe per name), so a question with new words asks nothing more; where more
than SPEAKERS_READ people spoke in a partition, the words of the question are looked up one by one instead (each cached
the same way, under a keyed digest of the word, as the word counts are).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from memory.models.sources import ROLE_SPEAKERS
from memory.recall.caching import (
    VERSIONED_SECONDS,
    at_version,
    digests,
    held_at,
    kept_off_path,
    memory_version_now,
    reach_key,
)
from memory.services.audit import memory_version_key

CACHE_SECONDS = VERSIONED_SECONDS
WITHIN_SECONDS = 60  # what a search inside a transaction read
# The kinds of their cache keys (memory.recall.caching.reach_key): named anew when their values took the memory version
# along, so that a process of the code before, sharing Redis during an upgrade, reads none of them.
REFERENCE, SPEAKERS, SPEAKER = "reference", "speakers-read", "speaker-named"
# Past this many people who spoke in one partition, the set is not read whole.
SPEAKERS_READ = 500
# The first word of a speaker's name, as the index on it (memory_chunk.chunk_partition_speaker) has it.
SPEAKER_NAME = "lower(split_part(c.speaker, ' ', 1))"


def first_name(speaker: str) -> str:
    """A speaker's first name as SPEAKER_NAME reads it in SQL."""
    return speaker.split(" ", 1)[0].lower()


def anchor_keys(params: dict[str, Any]) -> list[str]:
    """The cache keys `reference_time` and `speakers_named` read, and the owner's memory version (a search reads them
    ahead)."""
    return [reach_key(REFERENCE, params), reach_key(SPEAKERS, params), memory_version_key(params["owner"])]


def _kept(values: dict[str, Any], version: Any, params: dict[str, Any]) -> None:
    # Never kept long from inside a transaction: writes of its own, not committed (or never to be), may be among them.
    seconds = WITHIN_SECONDS if connection.in_atomic_block else CACHE_SECONDS
    kept_off_path(at_version(values, version), seconds, params["owner"])


def reference_time(params: dict[str, Any]) -> datetime:
    """When the newest source in reach happened (now if there is none, or it claims to be from the future)."""
    now = timezone.now()
    key, version = reach_key(REFERENCE, params), memory_version_now(params["owner"])  # the version before the rows
    held = held_at([key], version)
    if key in held:
        newest = held[key]
    else:
        with connection.cursor() as cursor:
            # One index probe per partition (source_owner_recent: owner, partition, occurred_at DESC).
            cursor.execute(
                """
                SELECT max(newest) FROM unnest(%(partitions)s::text[]) AS p(id), LATERAL (
                    SELECT s.occurred_at AS newest FROM memory_source s
                    WHERE s.owner_id = %(owner)s AND s.partition_id = p.id AND s.tombstoned_at IS NULL
                          AND s.scope = %(scope)s AND s.occurred_at IS NOT NULL
                    ORDER BY s.occurred_at DESC LIMIT 1
                ) latest
                """,
                params,
            )
            newest = cursor.fetchone()[0]  # None: no source in reach, and "now" is whenever it is asked
        _kept({key: newest}, version, params)
    return min(newest or now, now)


def speakers_named(params: dict[str, Any], terms: list[str]) -> frozenset[str]:
    """The query words that are the (first) name of someone who spoke in the memories in reach."""
    words = {term for term in terms if term.isalpha() and term not in ROLE_SPEAKERS}
    if not words:
        return frozenset()
    spoke, complete = _speakers_in_reach(params)
    named = frozenset(words & spoke)
    return named if complete else named | _words_spoken(params, sorted(words - spoke))


def _speakers_in_reach(params: dict[str, Any]) -> tuple[frozenset[str], bool]:
    """The first names of those who spoke in reach, and whether that is all of them (at most SPEAKERS_READ names a
    partition are walked)."""
    key, version = reach_key(SPEAKERS, params), memory_version_now(params["owner"])
    held = held_at([key], version).get(key)
    if held is not None:
        names, complete = held
        return frozenset(names), complete
    with connection.cursor() as cursor:
        # A loose index scan of chunk_partition_speaker (owner, partition, first name) in each partition in reach:
        # each step the next name up, so the walk costs a probe per person, not a row per turn. A partition's walk
        # ends with a row without a name once it ran out of names (at once, for a partition without turns).
        cursor.execute(
            f"""
            WITH RECURSIVE walked(partition, name, step) AS (
                SELECT p.id, first.name, 1 FROM unnest(%(partitions)s::text[]) AS p(id) LEFT JOIN LATERAL (
                    SELECT {SPEAKER_NAME} AS name FROM memory_chunk c
                    WHERE c.owner_id = %(owner)s AND c.partition_id = p.id ORDER BY 1 LIMIT 1
                ) first ON TRUE
                UNION ALL
                SELECT w.partition, (
                    SELECT {SPEAKER_NAME} FROM memory_chunk c
                    WHERE c.owner_id = %(owner)s AND c.partition_id = w.partition AND {SPEAKER_NAME} > w.name
                    ORDER BY 1 LIMIT 1
                ), w.step + 1
                FROM walked w WHERE w.name IS NOT NULL AND w.step <= %(most)s
            )
            SELECT partition, name FROM walked
            """,  # noqa: S608 (a fixed SQL fragment; every value is a parameter)
            params | {"most": SPEAKERS_READ},
        )
        rows = cursor.fetchall()
    walked_to_the_end = {partition for partition, name in rows if name is None}
    complete = walked_to_the_end >= set(params["partitions"])
    names = sorted({name for _, name in rows if name})
    _kept({key: (names, complete)}, version, params)
    return frozenset(names), complete


def _words_spoken(params: dict[str, Any], words: list[str]) -> frozenset[str]:
    """Of `words`, those that are the first name of someone who spoke in reach, one lookup per word (cached)."""
    keys = {word: f"{reach_key(SPEAKER, params)}:{digest}" for word, digest in digests(words).items()}
    version = memory_version_now(params["owner"])
    cached = held_at(list(keys.values()), version)
    unknown = [word for word in words if keys[word] not in cached]
    if unknown:
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT w.word, EXISTS (
                    SELECT 1 FROM memory_chunk c
                    WHERE c.owner_id = %(owner)s AND {SPEAKER_NAME} = w.word
                          AND c.partition_id = ANY(%(partitions)s)
                ) FROM unnest(%(words)s::text[]) AS w(word)
                """,  # noqa: S608 (a fixed SQL fragment; every value is a parameter)
                params | {"words": unknown},
            )
            fresh = {keys[word]: spoke for word, spoke in cursor.fetchall()}
        _kept(fresh, version, params)
        cached |= fresh
    return frozenset(word for word in words if cached[keys[word]])

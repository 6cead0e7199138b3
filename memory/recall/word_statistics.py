"""How many rows in reach a search's words are held by: N and each word's df per corpus, for the keyword leg's
weights (memory.recall.legs), cached per reach for STATS_SECONDS.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from memory.recall.caching import cached_many, keep_many, reach_key
from memory.recall.corpora import WORD_QUERY, Corpus

# Counting a word's rows stops here: past it a word is common anyway, and counting costs time.
DF_CAP = 5_000
N_CAP = 200_000
STATS_SECONDS = 600


def _stats_key(corpus: Corpus, params: dict[str, Any], word: str) -> str:
    return f"{reach_key(f'df:{corpus.name}', params)}:{word}"


def statistics_keys(corpora: tuple[Corpus, ...], terms: list[str], params: dict[str, Any]) -> list[str]:
    """The cache keys `statistics_counted` reads for these words in each corpus (a search reads them ahead)."""
    return [_stats_key(corpus, params, word) for corpus in corpora for word in ["", *terms]]


def statistics_counted(
    corpora: tuple[Corpus, ...], terms: list[str], params: dict[str, Any]
) -> dict[str, dict[str, int]]:
    """N (under the word "") and each word's df in every corpus: what the cache holds, and what it does not
    counted in one statement for all the corpora (a search counts a new word's rows in its three corpora at once,
    not in a round trip each) and kept."""
    keys = {(corpus.name, word): _stats_key(corpus, params, word) for corpus in corpora for word in ["", *terms]}
    cached = cached_many(list(keys.values()))
    counts: dict[str, dict[str, int]] = {corpus.name: {} for corpus in corpora}
    scans, values = [], dict(params)
    for number, corpus in enumerate(corpora):
        held = {word: cached[keys[corpus.name, word]] for word in ["", *terms] if keys[corpus.name, word] in cached}
        counts[corpus.name] = {word: int(count) for word, count in held.items()}
        if "" not in held:
            scans.append(
                f"SELECT '{corpus.name}', '', count(*) FROM "  # noqa: S608 (fixed SQL fragments; values are parameters)
                f"(SELECT 1 FROM {corpus.table} WHERE {corpus.reach} LIMIT {N_CAP}) m"
            )
        if missing := [word for word in terms if word not in held]:
            # One bounded lookup per word (a LATERAL subquery per unnested word). Each word's tsquery is made once,
            # behind OFFSET 0: inlined, PostgreSQL made it again for every row it matched (a cold question's counts
            # on 419 chunks: 7.1 -> 3.6 ms; docs/benchmarks.md, issue 18, twelfth pass).
            values[f"terms{number}"] = missing
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
    if not scans:
        return counts
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(f"({scan})" for scan in scans), values)
        fresh = cursor.fetchall()
    for name, word, count in fresh:
        counts[name][word] = int(count)
    keep_many({keys[name, word]: count for name, word, count in fresh}, STATS_SECONDS)
    return counts

"""The SQL of the two ranking legs over each corpus (claims, chunks, node cards).

Each corpus names its table, the filters that keep a row in reach (owner, partitions, scope, liveness, time
window, node types) and the time a row is "from". The filters are fixed SQL text; every value is a parameter.

- Keyword: rows matching any query word as written or stemmed (`plainto_tsquery` per word, GIN), scored
  Σ idf(word) · ts_rank(row, word), where idf = ln(1 + (N - df + 0.5) / (df + 0.5)) over the rows in reach:
  BM25's weighting, so a rare name counts far more than a word every row has.
- Vector: cosine distance on the per-model HNSW expression index `(embedding::vector(D))`, rows of the
  active model only; `hnsw.ef_search` and an iterative scan are set for the transaction.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from redis.exceptions import RedisError

# Counting a word's rows stops here: past it a word is common anyway, and counting costs time.
DF_CAP = 5_000
N_CAP = 200_000
STATS_SECONDS = 600
# A word held by more than this share of the rows (and more than MIN_SELECTIVE_ROWS) does not pick candidates.
SELECTIVE_SHARE = 0.05
MIN_SELECTIVE_ROWS = 200
# A word matches as written or by its English stem, like the text was indexed (memory.models.search).
# plainto_tsquery, not websearch_to_tsquery: a stored "-1234" must not read as "not 1234".
WORD_QUERY = "(plainto_tsquery('simple', {word}) || plainto_tsquery('english', {word}))"


def _any_word(count: int) -> str:
    """Matches rows with any of the query words (%(w0)s, %(w1)s, ...), through the GIN index."""
    return "(" + " || ".join(WORD_QUERY.format(word=f"%(w{n})s") for n in range(count)) + ")"


@dataclass(frozen=True)
class Corpus:
    name: str  # claim | chunk | node
    table: str  # FROM clause, aliased `c`
    filters: str  # WHERE clause over `c` (and joins), with named parameters
    time: str  # the row's time, for `since`

    def where(self, since: datetime | None) -> str:
        return self.filters + (f" AND {self.time} >= %(since)s" if since else "")


CLAIMS = Corpus(
    name="claim",
    table="memory_claim c",
    filters=(
        "c.owner_id = %(owner)s AND c.partition_id = ANY(%(partitions)s) AND c.status = 'active'"
        " AND c.scope = %(scope)s AND (c.expires_at IS NULL OR c.expires_at > now() OR c.pinned)"
        " AND NOT EXISTS (SELECT 1 FROM memory_node n WHERE n.id = c.subject_id AND n.type = ANY(%(excluded)s))"
    ),
    time="COALESCE(c.stated_at, c.recorded_at)",
)
CHUNKS = Corpus(
    name="chunk",
    table="memory_chunk c JOIN memory_source s ON s.id = c.source_id",
    filters=(
        "c.owner_id = %(owner)s AND c.partition_id = ANY(%(partitions)s) AND s.tombstoned_at IS NULL"
        " AND s.scope = %(scope)s"
    ),
    time="COALESCE(c.authored_at, s.occurred_at)",
)
NODES = Corpus(
    name="node",
    table="memory_node c",
    filters=(
        "c.owner_id = %(owner)s AND c.partition_id = ANY(%(partitions)s) AND c.merged_into_id IS NULL"
        " AND NOT c.is_self AND c.scope = %(scope)s AND NOT (c.type = ANY(%(excluded)s))"
    ),
    time="COALESCE(c.last_seen_at, c.created_at)",
)
CORPORA = (CLAIMS, CHUNKS, NODES)


@dataclass(frozen=True)
class Hit:
    corpus: str
    id: str
    score: float  # keyword: Σ idf·rank; vector: cosine similarity


def _stats_key(corpus: Corpus, params: dict[str, Any], word: str) -> str:
    reach = hashlib.sha256(f"{sorted(params['partitions'])}|{params['scope']}".encode()).hexdigest()[:16]
    return f"recall:df:{corpus.name}:{params['owner']}:{reach}:{word}"


def word_statistics(corpus: Corpus, terms: list[str], params: dict[str, Any]) -> tuple[int, dict[str, int]]:
    """How many rows are in reach (N) and how many hold each word (df), both capped; cached for a few minutes
    (an idf is a weight: a few minutes old is as good). The time window and node types do not change them."""
    keys = {word: _stats_key(corpus, params, word) for word in ["", *terms]}
    try:
        cached = cache.get_many(list(keys.values()))
    except RedisError:
        cached = {}
    missing = [word for word, key in keys.items() if key not in cached]
    if missing:
        where = corpus.filters
        sql = f"""
            SELECT t.word, (SELECT count(*) FROM (SELECT 1 FROM {corpus.table}
                            WHERE {where} AND (t.word = '' OR c.search_vector @@ {WORD_QUERY.format(word="t.word")})
                            LIMIT CASE WHEN t.word = '' THEN {N_CAP} ELSE {DF_CAP} END) m)
            FROM unnest(%(terms)s::text[]) AS t(word)
        """  # noqa: S608 (fixed SQL fragments from this module; every value is a parameter)
        with connection.cursor() as cursor:
            cursor.execute(sql, params | {"terms": missing})
            fresh = {word: int(count) for word, count in cursor.fetchall()}
        cached |= {keys[word]: count for word, count in fresh.items()}
        with contextlib.suppress(RedisError):
            cache.set_many({keys[word]: count for word, count in fresh.items()}, STATS_SECONDS)
    return int(cached[keys[""]]), {word: int(cached[keys[word]]) for word in terms}


def keyword_hits(
    corpus: Corpus, terms: list[str], params: dict[str, Any], since: datetime | None, limit: int
) -> list[Hit]:
    """Rows holding the selective query words, scored by every query word they hold."""
    total, df = word_statistics(corpus, terms, params) if terms else (0, {})
    present = [word for word in terms if df[word] > 0]
    if not present:
        return []
    idf = {word: math.log(1 + (max(total, df[word]) - df[word] + 0.5) / (df[word] + 0.5)) for word in present}
    # Candidates come from the words that tell rows apart; a word most rows hold only adds to their score.
    common = max(MIN_SELECTIVE_ROWS, total * SELECTIVE_SHARE)
    selective = [word for word in present if df[word] <= common] or [min(present, key=lambda word: df[word])]
    sql = f"""
        WITH weighted AS MATERIALIZED (
            SELECT {WORD_QUERY.format(word="w.word")} AS q, w.idf
            FROM unnest(%(words)s::text[], %(idfs)s::float8[]) AS w(word, idf)
        )
        SELECT c.id, (SELECT sum(w.idf * ts_rank(c.search_vector, w.q, 1)) FROM weighted w
                      WHERE c.search_vector @@ w.q) AS score
        FROM {corpus.table}
        WHERE {corpus.where(since)} AND c.search_vector @@ {_any_word(len(selective))}
        ORDER BY score DESC, c.id
        LIMIT %(limit)s
    """  # noqa: S608 (fixed SQL fragments from this module; every value is a parameter)
    values = params | {f"w{n}": word for n, word in enumerate(selective)}
    values |= {"words": present, "idfs": [idf[word] for word in present], "since": since, "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        return [Hit(corpus.name, row[0], float(row[1] or 0)) for row in cursor.fetchall()]


def vector_hits(
    corpus: Corpus, vector: list[float], model_id: str, params: dict[str, Any], since: datetime | None, limit: int
) -> list[Hit]:
    dimensions = len(vector)
    distance = f"(c.embedding::vector({dimensions})) <=> %(vector)s::vector({dimensions})"
    sql = f"""
        SELECT c.id, 1 - ({distance}) AS similarity
        FROM {corpus.table}
        WHERE {corpus.where(since)} AND c.embedding_model = %(model)s
        ORDER BY {distance}
        LIMIT %(limit)s
    """  # noqa: S608 (fixed SQL fragments; every value is a parameter)
    literal = "[" + ",".join(f"{value:.7g}" for value in vector) + "]"
    values = params | {"vector": literal, "model": model_id, "since": since, "limit": limit}
    with transaction.atomic(), connection.cursor() as cursor:
        # SET LOCAL: these hold for this transaction only, never leaking into a pooled connection.
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(settings.SEARCH_EF_SEARCH)])
        cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        cursor.execute(sql, values)
        # Below the floor a "nearest" row is not related at all; it would only fill the answer.
        floor = settings.SEARCH_MIN_SIMILARITY
        return [Hit(corpus.name, row[0], float(row[1])) for row in cursor.fetchall() if float(row[1]) >= floor]

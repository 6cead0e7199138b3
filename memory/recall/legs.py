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

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

# Counting a word's rows stops here: past it a word is common anyway, and counting costs time.
DF_CAP = 20_000
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


def keyword_hits(
    corpus: Corpus, terms: list[str], params: dict[str, Any], since: datetime | None, limit: int
) -> list[Hit]:
    if not terms:
        return []
    where = corpus.where(since)
    sql = f"""
        WITH words AS MATERIALIZED (
            SELECT w.word, w.q, (SELECT count(*) FROM (SELECT 1 FROM {corpus.table}
                                  WHERE {where} AND c.search_vector @@ w.q LIMIT {DF_CAP}) m) AS df
            FROM (SELECT t.word, {WORD_QUERY.format(word="t.word")} AS q FROM unnest(%(terms)s::text[]) AS t(word)) w
        ), total AS MATERIALIZED (
            SELECT count(*) AS n FROM (SELECT 1 FROM {corpus.table} WHERE {where} LIMIT {DF_CAP * 5}) m
        ), weighted AS MATERIALIZED (
            SELECT words.q, ln(1 + (greatest(total.n, words.df) - words.df + 0.5) / (words.df + 0.5)) AS idf
            FROM words, total WHERE words.df > 0
        )
        SELECT c.id, (SELECT sum(w.idf * ts_rank(c.search_vector, w.q, 1)) FROM weighted w
                      WHERE c.search_vector @@ w.q) AS score
        FROM {corpus.table}
        WHERE {where} AND c.search_vector @@ {_any_word(len(terms))}
        ORDER BY score DESC, c.id
        LIMIT %(limit)s
    """  # noqa: S608 (fixed SQL fragments from this module; every value is a parameter)
    words = {f"w{n}": word for n, word in enumerate(terms)}
    values = params | words | {"terms": terms, "since": since, "limit": limit}
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

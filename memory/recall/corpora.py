"""The three corpora a search ranks (claims, chunks, node cards) and the keyed memories, as SQL fragments.

Each corpus names its table, the filters that keep a row in reach (owner, partitions, scope, liveness, time
window, node types) and the time a row is "from". The filters are fixed SQL text; every value is a parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# A word matches as written or by its English stem, like the text was indexed (memory.models.search).
# plainto_tsquery, not websearch_to_tsquery: a stored "-1234" must not read as "not 1234".
WORD_QUERY = "(plainto_tsquery('simple', {word}) || plainto_tsquery('english', {word}))"

Span = tuple[datetime | None, datetime | None]  # a time window: since (inclusive), until (exclusive)


@dataclass(frozen=True)
class Corpus:
    name: str  # claim | chunk | node
    table: str  # FROM clause, aliased `c`
    reach: str  # WHERE clause over `c` (and joins) of the rows a search can reach, with named parameters
    narrowing: str  # what a single search adds to it (expiry, node types); word statistics leave it out
    time: str  # the row's time, for `since`
    # When a row in reach leaves it by time alone (NULL: never), as `narrowing` says: for what holds rows for later
    # (memory.recall.held_vectors). Keep the two together.
    lapses: str = "NULL"

    @property
    def filters(self) -> str:
        return f"{self.reach} AND {self.narrowing}"

    def where(self, since: datetime | None, until: datetime | None = None, key: str = "") -> str:
        """The filters and the time window, its bounds the parameters `since<key>` and `until<key>` (a statement
        that scans several windows gives each its own key)."""
        return (
            self.filters
            + (f" AND {self.time} >= %(since{key})s" if since else "")
            + (f" AND {self.time} < %(until{key})s" if until else "")
        )


CLAIMS = Corpus(
    name="claim",
    table="memory_claim c",
    reach=(
        "c.owner_id = %(owner)s AND c.partition_id = ANY(%(partitions)s) AND c.status = 'active'"
        " AND c.scope = %(scope)s"
    ),
    narrowing=(
        "(c.expires_at IS NULL OR c.expires_at > now() OR c.pinned)"
        " AND NOT EXISTS (SELECT 1 FROM memory_node n WHERE n.id = c.subject_id AND n.type = ANY(%(excluded)s))"
    ),
    time="COALESCE(c.stated_at, c.recorded_at)",
    lapses="CASE WHEN c.pinned THEN NULL ELSE c.expires_at END",
)
# A chunk carries its source's scope and time; a replaced or erased source's chunks are deleted with it (the
# pipeline writes a job's chunks holding its source's row, so none land after).
CHUNKS = Corpus(
    name="chunk",
    table="memory_chunk c",
    reach="c.owner_id = %(owner)s AND c.partition_id = ANY(%(partitions)s) AND c.scope = %(scope)s",
    narrowing="TRUE",
    time="c.occurred_at",
)
NODES = Corpus(
    name="node",
    table="memory_node c",
    reach=(
        "c.owner_id = %(owner)s AND c.partition_id = ANY(%(partitions)s) AND c.merged_into_id IS NULL"
        " AND NOT c.is_self AND c.scope = %(scope)s"
    ),
    narrowing="NOT (c.type = ANY(%(excluded)s))",
    time="COALESCE(c.last_seen_at, c.created_at)",
)
CORPORA = (CLAIMS, CHUNKS, NODES)
# Keyed memories (seeds/004 memory_search): the current values of keys, quarantined ones only when asked for.
KEYED_MEMORIES = Corpus(
    name="claim",
    table="memory_claim c",
    reach=(
        "c.owner_id = %(owner)s AND c.partition_id = ANY(%(partitions)s) AND c.status = ANY(%(statuses)s)"
        " AND c.key <> ''"
    ),
    narrowing="TRUE",
    time="c.recorded_at",
)

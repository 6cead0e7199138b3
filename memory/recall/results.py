"""The rows behind ranked candidates, read as results: claims with their evidence, chunks, node cards.

A search hydrates the best candidates of all three corpora in one round trip (the statements prepared and sent
together, memory.recall.prepared), as plain rows in fixed SQL: no model instances, no vectors, no whole source
texts (the ORM spent more time building these queries than PostgreSQL spent answering them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.recall.fusion import Candidate
from memory.recall.prepared import Statement, read_prepared


@dataclass
class SearchResult:
    """One memory found: a claim, a piece of a source (chunk) or a node card."""

    candidate: Candidate
    text: str
    time: datetime | None
    partition: str
    status: str = "active"
    pinned: bool = False
    importance: int = 3
    kind: str = ""
    node: dict[str, Any] | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    conversation_ids: set[str] = field(default_factory=set)
    speaker: str = ""  # who said a chunk, as the host named them
    bare: bool = False  # a node card with nothing but its type and label

    @property
    def type(self) -> str:
        return self.candidate.corpus

    def as_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "id": self.candidate.id,
            "text": self.text,
            "kind": self.kind,
            "score": round(self.candidate.score, 6),
            "legs": self.candidate.legs,
            "boosts": {name: value for name, value in self.candidate.boosts.items() if value},
            "status": self.status,
            "pinned": self.pinned,
            "node": self.node,
            "evidence": self.evidence,
            "time": self.time,
            "partition": self.partition,
        }


def _node_json(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any] | None:
    if row[f"{prefix}id"] is None:
        return None
    return {"nodeId": row[f"{prefix}id"], "type": row[f"{prefix}type"], "label": row[f"{prefix}label"]}


def _conversation_of(row: Mapping[str, Any], prefix: str = "source__") -> set[str]:
    """The ids a conversation is known by (thread, source, parent source), for the conversation boost."""
    return {row[f"{prefix}thread_id"], row[f"{prefix}external_id"], row[f"{prefix}parent__external_id"] or ""} - {""}


_CLAIM_ROWS = """
    SELECT c.id, c.statement, c.stated_at, c.recorded_at, c.status, c.pinned, c.importance, c.kind,
           p.key AS partition__key, n.id AS subject__id, n.type AS subject__type, n.label AS subject__label
    FROM memory_claim c JOIN memory_partition p ON p.id = c.partition_id LEFT JOIN memory_node n ON n.id = c.subject_id
    WHERE c.id = ANY(%s)
"""
_EVIDENCE_ROWS = """
    SELECT e.claim_id, e.source_id, e.excerpt, e.message_id, e.authored_at, s.thread_id AS source__thread_id,
           s.external_id AS source__external_id, parent.external_id AS source__parent__external_id
    FROM memory_evidence e JOIN memory_source s ON s.id = e.source_id
         LEFT JOIN memory_source parent ON parent.id = s.parent_id
    WHERE e.claim_id = ANY(%s)
    ORDER BY e.authored_at, e.id
"""

# A node can be the subject of tens of thousands of claims: its newest evidence is looked for among the evidence
# of its NEWEST_CLAIMS most recently stated active claims (the index claim_subject_recent), not all of them. Only
# a claim stated earlier and said again since (new evidence on an old claim) can be missed, on such a node.
NEWEST_CLAIMS = 100


def _claim_statements(ids: list[str]) -> list[Statement]:
    return [(_CLAIM_ROWS, [ids]), (_EVIDENCE_ROWS, [ids])]


def _claims_built(claims: list[dict[str, Any]], evidence_rows: list[dict[str, Any]]) -> dict[str, SearchResult]:
    evidence: dict[str, list[dict[str, Any]]] = {}
    for ref in evidence_rows:
        evidence.setdefault(ref["claim_id"], []).append(ref)
    found = {}
    for claim in claims:
        held = evidence.get(claim["id"], [])
        found[claim["id"]] = SearchResult(
            candidate=Candidate("claim", claim["id"]),
            text=claim["statement"],
            time=claim["stated_at"] or claim["recorded_at"],
            partition=claim["partition__key"],
            status=claim["status"],
            pinned=claim["pinned"],
            importance=claim["importance"],
            kind=claim["kind"],
            node=_node_json(claim, "subject__"),
            evidence=[
                {
                    "sourceId": ref["source_id"],
                    "excerpt": ref["excerpt"],
                    "messageId": ref["message_id"],
                    "authoredAt": ref["authored_at"],
                }
                for ref in held
            ],
            conversation_ids=set().union(*(_conversation_of(ref) for ref in held)),
        )
    return found


# A chunk's result: its row, its partition's key, its source's and its parent source's ids and times.
_CHUNK_ROWS = """
    SELECT c.id, c.text, c.speaker, c.message_id, c.authored_at, p.key AS partition__key, c.source_id,
           s.kind AS source__kind, s.authored_at AS source__authored_at, s.occurred_at AS source__occurred_at,
           s.thread_id AS source__thread_id, s.external_id AS source__external_id,
           parent.external_id AS source__parent__external_id
    FROM memory_chunk c JOIN memory_partition p ON p.id = c.partition_id JOIN memory_source s ON s.id = c.source_id
         LEFT JOIN memory_source parent ON parent.id = s.parent_id
    WHERE c.id = ANY(%s)
"""


def _chunks_built(chunks: list[dict[str, Any]]) -> dict[str, SearchResult]:
    found = {}
    for chunk in chunks:
        speaker = chunk["speaker"] if chunk["speaker"] not in ("", "user", "assistant") else ""
        found[chunk["id"]] = SearchResult(
            candidate=Candidate("chunk", chunk["id"]),
            text=f"{speaker}: {chunk['text']}" if speaker else chunk["text"],
            time=chunk["authored_at"] or chunk["source__occurred_at"],
            partition=chunk["partition__key"],
            kind=chunk["source__kind"],
            evidence=[
                {
                    "sourceId": chunk["source_id"],
                    "excerpt": chunk["text"][:500],
                    "messageId": chunk["message_id"],
                    "authoredAt": chunk["authored_at"] or chunk["source__authored_at"],
                }
            ],
            conversation_ids=_conversation_of(chunk),
            speaker=chunk["speaker"],
        )
    return found


# A node card with what it shows besides its own fields, in one statement: a task's status (one active
# HAS_TASK_STATUS claim per task) and the newest evidence of its NEWEST_CLAIMS latest active claims (a card is as
# recent as the newest thing said about it, not as the moment it was written down). Each of those claims' evidence
# is a subquery of its own, so it is read through the claim's index entries whatever the planner thinks of the
# table's size; a join let a store without statistics hash the whole evidence table.
_NODE_ROWS = """
    SELECT n.id, n.type, n.label, n.summary, n.last_seen_at, n.created_at, p.key AS partition__key,
           (SELECT c.object_value #>> '{}' FROM memory_claim c
            WHERE n.type = 'Task' AND c.subject_id = n.id AND c.predicate = 'HAS_TASK_STATUS' AND c.status = 'active'
            LIMIT 1) AS task_status,
           (SELECT max((SELECT max(e.authored_at) FROM memory_evidence e WHERE e.claim_id = recent.id))
            FROM (SELECT c.id FROM memory_claim c WHERE c.subject_id = n.id AND c.status = 'active'
                  ORDER BY c.stated_at DESC LIMIT %s) recent) AS newest
    FROM memory_node n JOIN memory_partition p ON p.id = n.partition_id
    WHERE n.id = ANY(%s)
"""


def _nodes_built(nodes: list[dict[str, Any]]) -> dict[str, SearchResult]:
    found = {}
    for node in nodes:
        status = node["task_status"]
        card = f"{node['type']}: {node['label']}" + (f" ({status})" if status else "")
        found[node["id"]] = SearchResult(
            candidate=Candidate("node", node["id"]),
            text=card + (f". {node['summary']}" if node["summary"] else ""),
            time=node["newest"] or node["last_seen_at"] or node["created_at"],
            partition=node["partition__key"],
            kind=node["type"],
            node=_node_json(node),
            bare=not node["summary"],
        )
    return found


@dataclass(frozen=True)
class _Reading:
    """How one corpus's results are read: its statements for the ids wanted, and the results built from their rows."""

    statements: Callable[[list[str]], list[Statement]]
    built: Callable[..., dict[str, SearchResult]]  # from the rows of each of its statements, in order
    # the column of each statement's rows naming the result they belong to (the first statement: the result's own row)
    keys: tuple[str, ...]


_READINGS = {
    "claim": _Reading(_claim_statements, _claims_built, ("id", "claim_id")),
    "chunk": _Reading(lambda ids: [(_CHUNK_ROWS, [ids])], _chunks_built, ("id",)),
    "node": _Reading(lambda ids: [(_NODE_ROWS, [NEWEST_CLAIMS, ids])], _nodes_built, ("id",)),
}
# Results' rows kept by a held copy of a reach (memory.recall.held_vectors): by corpus and id, the rows of each of
# the corpus's statements that belong to that result.
HeldResults = Mapping[str, Mapping[str, list[list[dict[str, Any]]]]]


# The rows' statements look rows up by id: every plan is the same index probes whoever searches and however many
# rows a table holds, so each is planned once per connection (PostgreSQL kept planning the node and evidence
# statements anew, 0.3-0.4 ms each a search, since a generic plan's estimate for `= ANY($1)` looked dearer).
_PLANNED_ONCE = {"plan_cache_mode": "force_generic_plan"}


def _results(corpus: str, ids: list[str]) -> dict[str, SearchResult]:
    rows = _read({corpus: ids}, _PLANNED_ONCE)
    return _READINGS[corpus].built(*rows[corpus]) if corpus in rows else {}


def claim_results(ids: list[str]) -> dict[str, SearchResult]:
    return _results("claim", ids)


def chunk_results(ids: list[str]) -> dict[str, SearchResult]:
    return _results("chunk", ids)


def node_results(ids: list[str]) -> dict[str, SearchResult]:
    return _results("node", ids)


HYDRATORS = {"claim": claim_results, "chunk": chunk_results, "node": node_results}


def _read(ids: Mapping[str, list[str]], settings: Mapping[str, str]) -> dict[str, list[list[dict[str, Any]]]]:
    """The rows of each corpus's statements for these ids (by corpus), in one round trip."""
    statements: list[Statement] = []
    readings = []
    for corpus, reading in _READINGS.items():
        if ids.get(corpus):
            mine = reading.statements(ids[corpus])
            readings.append((corpus, len(statements), len(mine)))
            statements += mine
    rows = read_prepared(statements, settings=dict(settings)) if statements else []
    return {corpus: rows[first : first + count] for corpus, first, count in readings}


def rows_held(ids: Mapping[str, list[str]], settings: Mapping[str, str] | None = None) -> HeldResults:
    """The rows behind these results (ids by corpus), each result's apart, for a held copy of a reach to keep
    (`settings`: besides the plan's); a result whose own row is gone is left out."""
    held: dict[str, dict[str, list[list[dict[str, Any]]]]] = {}
    for corpus, rows in _read(ids, _PLANNED_ONCE | dict(settings or {})).items():
        keys = _READINGS[corpus].keys
        mine: dict[str, list[list[dict[str, Any]]]] = {row_id: [[] for _ in keys] for row_id in ids[corpus]}
        for number, (key, found) in enumerate(zip(keys, rows, strict=True)):
            for row in found:
                mine[row[key]][number].append(row)
        held[corpus] = {row_id: parts for row_id, parts in mine.items() if parts[0]}
    return held


def hydrated(candidates: list[Candidate], held: HeldResults | None = None) -> list[SearchResult]:
    """The rows behind the candidates of every corpus, in one round trip (a row gone since it was ranked is
    dropped), in the candidates' order, legs carried over. `held`: the rows of every result in reach, as a held copy
    of the reach keeps them (memory.recall.held_vectors, `rows_held`): the results among them are built from those,
    and a search whose candidates are all held sends nothing; one the copy does not hold (written since, found by a
    leg's statement) is read as before."""
    wanted = {corpus: {c.id: c for c in candidates if c.corpus == corpus} for corpus in _READINGS}
    held = held or {}
    unheld = {corpus: [row_id for row_id in wanted[corpus] if row_id not in held.get(corpus, {})] for corpus in wanted}
    built = {corpus: _READINGS[corpus].built(*rows) for corpus, rows in _read(unheld, _PLANNED_ONCE).items()}
    for corpus, reading in _READINGS.items():
        parts = [held[corpus][row_id] for row_id in wanted[corpus] if row_id in held.get(corpus, {})]
        if parts:
            rows = [[row for part in parts for row in part[number]] for number in range(len(reading.keys))]
            built[corpus] = built.get(corpus, {}) | reading.built(*rows)
    results = []
    for candidate in candidates:  # in the candidates' order, read or held alike
        if (result := built.get(candidate.corpus, {}).get(candidate.id)) is not None:
            result.candidate = candidate
            results.append(result)
    return results

"""One search over the memories a request can reach: the legs of each corpus, fusion, boosts, hydration.

Personal and reference scopes never mix: a personal search reads only personal rows of every corpus, a
reference search only reference rows. Vectors of another model than the active one are never compared;
rows without one still match by keyword. Runs a fixed number of queries whatever the number of results.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory.access import Access
from memory.models import Chunk, Scope, SourceScope
from memory.recall import bookkeeping
from memory.recall.anchors import anchor_keys, first_name, reference_time, speakers_named
from memory.recall.caching import read_ahead
from memory.recall.fusion import (
    CONVERSATION_BOOST,
    PIN_BOOST,
    SPEAKER_BOOST,
    WINDOW_BOOST,
    Candidate,
    fuse,
    importance_boost,
    rank,
    recency_boost,
)
from memory.recall.legs import CORPORA, Hit, keyword_hits, statistics_counted, statistics_keys, vector_hits
from memory.recall.question import Window, asked_window
from memory.recall.terms import query_terms

logger = logging.getLogger("memory.recall")
_WORD = re.compile(r"\w+")
RECENT_DAYS = 7
MAX_LIMIT = 50


@dataclass(frozen=True)
class SearchRequest:
    query: str
    scope: str = SourceScope.PERSONAL
    limit: int = 8
    exclude_node_types: tuple[str, ...] = ()
    since: datetime | None = None
    recent_only: bool = False
    conversation_id: str = ""
    use_vector: bool = True
    use_keyword: bool = True  # the two legs can be switched off one at a time (benchmarks)

    @property
    def window_start(self) -> datetime | None:
        recent = timezone.now() - timedelta(days=RECENT_DAYS) if self.recent_only else None
        return max(filter(None, (self.since, recent)), default=None)


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


# What a result shows, read as plain rows (`values()`): no model instances, no vectors, no whole source texts.
_CONVERSATION = ("source__thread_id", "source__external_id", "source__parent__external_id")


# Claims are most of what a search shows: read them with fixed SQL (the ORM spent more time building these two
# queries than PostgreSQL spent answering them), in the shape `values()` gives.
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


def _rows(sql: str, *params: Any) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        names = [column.name for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def claim_results(ids: list[str]) -> dict[str, SearchResult]:
    evidence: dict[str, list[dict[str, Any]]] = {}
    for ref in _rows(_EVIDENCE_ROWS, ids):
        evidence.setdefault(ref["claim_id"], []).append(ref)
    claims = _rows(_CLAIM_ROWS, ids)
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


def chunk_results(ids: list[str]) -> dict[str, SearchResult]:
    chunks = Chunk.objects.filter(pk__in=ids).values(
        "id", "text", "speaker", "message_id", "authored_at", "partition__key", "source_id", "source__kind",
        "source__authored_at", "source__occurred_at", *_CONVERSATION,
    )  # fmt: skip
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


def node_results(ids: list[str]) -> dict[str, SearchResult]:
    found = {}
    for node in _rows(_NODE_ROWS, NEWEST_CLAIMS, ids):
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


HYDRATORS = {"claim": claim_results, "chunk": chunk_results, "node": node_results}


def query_vector(query: str) -> tuple[list[float] | None, str]:
    """The query's vector by the active embedder and its model id; (None, "") when it is unavailable."""
    from memory.embeddings import EmbedderUnavailable, get_embedder

    try:
        embedder = get_embedder()
        return embedder.embed_query(query), embedder.model_id
    except EmbedderUnavailable as exc:
        logger.warning("recall.embedder_unavailable", extra={"reason": str(exc)})
        return None, ""


# Embedding a query (a few ms of onnxruntime, which releases the GIL, or a remote call) runs on one of these threads
# while the request's own thread cuts the words and runs the keyword legs. Per process: a forked child starts its own.
EMBEDDING_THREADS = 4
_embedding_pool: tuple[int, ThreadPoolExecutor] | None = None
_embedding_pool_lock = threading.Lock()


def _embedding_started(query: str) -> Future[tuple[list[float] | None, str]]:
    global _embedding_pool
    with _embedding_pool_lock:
        if _embedding_pool is None or _embedding_pool[0] != os.getpid():
            pool = ThreadPoolExecutor(max_workers=EMBEDDING_THREADS, thread_name_prefix="query-embedding")
            _embedding_pool = (os.getpid(), pool)
        return _embedding_pool[1].submit(query_vector, query)


def search(access: Access, request: SearchRequest) -> list[SearchResult]:
    """The best `limit` memories for the query, best first."""
    access.require_scope(Scope.READ)
    limit = max(1, min(request.limit, MAX_LIMIT))
    depth = max(settings.SEARCH_CANDIDATES, limit * 4)
    params = {
        "owner": access.user.pk,
        "partitions": [partition.pk for partition in access.read_partitions],
        "scope": request.scope,
        "excluded": list(request.exclude_node_types),
    }
    since = request.window_start
    embedding = _embedding_started(request.query) if request.use_vector else None
    try:
        terms = query_terms(request.query) if request.use_keyword else []
        with read_ahead([*statistics_keys(CORPORA, terms, params), *anchor_keys(params, terms)]):
            reference = reference_time(params)
            # The time the question names ("in May") brings its own candidates, found within it, besides the rest.
            window = asked_window(request.query, reference)
            between: list[tuple[datetime | None, datetime | None]] = [(since, None)]
            if window is not None and (since is None or window.end > since):
                between.append((max(filter(None, (since, window.start))), window.end))
            if terms:
                statistics_counted(CORPORA, terms, params)  # what the keyword legs weigh by, in one statement
            keyword = _united(*(_keyword_hits(terms, params, span, depth) for span in between))
            vector, model_id = embedding.result() if embedding else (None, "")
            semantic = _united(*(_vector_hits(vector, model_id, params, span, depth) for span in between))
            speakers = speakers_named(params, terms)
    finally:
        if embedding is not None:
            embedding.cancel()  # a failure before its result was needed: nothing waits for it
    weights = {"keyword": settings.SEARCH_KEYWORD_WEIGHT, "vector": settings.SEARCH_VECTOR_WEIGHT}
    candidates = fuse({"keyword": rank(keyword), "vector": rank(semantic)}, weights)
    # Boosts move memories of similar relevance; only the best by relevance are worth reading in full.
    candidates.sort(key=lambda candidate: (-candidate.fused, candidate.corpus, candidate.id))
    results = _hydrated(candidates[: max(limit * 2, 16)])
    _boosted(results, request, min(window.end, reference) if window else reference, window, speakers)
    results = _composed(_folded(results), request.query)
    chosen = results[:limit]
    bookkeeping.note_access([result.candidate.id for result in chosen if result.type == "claim"])
    return chosen


def _keyword_hits(
    terms: list[str], params: dict[str, Any], between: tuple[datetime | None, datetime | None], depth: int
) -> list[Hit]:
    """The keyword hits of every corpus within `between`."""
    since, until = between
    return [hit for corpus in CORPORA for hit in keyword_hits(corpus, terms, params, since, depth, until)]


def _vector_hits(
    vector: list[float] | None,
    model_id: str,
    params: dict[str, Any],
    between: tuple[datetime | None, datetime | None],
    depth: int,
) -> list[Hit]:
    """The vector hits of every corpus within `between` (none without a vector)."""
    since, until = between
    return vector_hits(CORPORA, vector, model_id, params, since, depth, until) if vector is not None else []


def _united(hits: list[Hit], *more: list[Hit]) -> list[Hit]:
    """One list of hits from searches of the same leg (scores are comparable): each row once, the later searches'
    hit first (as found within the question's time window)."""
    later = [hit for found in reversed(more) for hit in found]
    return list({(hit.corpus, hit.id): hit for hit in [*later, *hits]}.values())


def _boosted(
    results: list[SearchResult],
    request: SearchRequest,
    reference: datetime,
    window: Window | None,
    speakers: frozenset[str],
) -> None:
    for result in results:
        boosts = result.candidate.boosts
        boosts["recency"] = recency_boost(result.time, reference)
        boosts["pinned"] = PIN_BOOST if result.pinned else 0.0
        if result.type == "claim":
            boosts["importance"] = importance_boost(result.importance)
        if request.conversation_id and request.conversation_id in result.conversation_ids:
            boosts["conversation"] = CONVERSATION_BOOST
        if window is not None and window.holds(result.time):
            boosts["when"] = WINDOW_BOOST
        if result.speaker and first_name(result.speaker) in speakers:
            boosts["speaker"] = SPEAKER_BOOST


def _composed(results: list[SearchResult], query: str) -> list[SearchResult]:
    """Best first, each memory once, and every slot adding something: a second chunk of a turn already shown
    is folded into the first; a bare node card that only names what the question names ("Person: Melanie" for
    "What does Melanie do?") goes after everything that says more."""
    results.sort(key=lambda result: (-result.candidate.score, result.type, result.candidate.id))
    asked = set(_WORD.findall(query.lower()))
    shown: set[tuple[str, str]] = set()
    kept, restating = [], []
    for result in results:
        if result.type == "chunk" and (turn := _turn_of(result)):
            if turn in shown:
                continue
            shown.add(turn)
        if result.bare and result.node and set(_WORD.findall(result.node["label"].lower())) <= asked:
            restating.append(result)
            continue
        kept.append(result)
    return kept + restating


def _turn_of(result: SearchResult) -> tuple[str, str] | None:
    ref = result.evidence[0] if result.evidence else None
    return (ref["sourceId"], ref["messageId"]) if ref and ref["messageId"] else None


def _folded(results: list[SearchResult]) -> list[SearchResult]:
    """A chunk holding the excerpt a claim was drawn from is the same memory: the claim stands for both (it
    carries that evidence) and takes the chunk's relevance if that is higher, its legs under `evidence.*`."""
    quoted: dict[str, list[tuple[str, SearchResult]]] = {}
    for result in results:
        if result.type == "claim":
            for ref in result.evidence:
                quoted.setdefault(ref["sourceId"], []).append((ref["excerpt"], result))
    kept = []
    for result in results:
        source_id = result.evidence[0]["sourceId"] if result.type == "chunk" else None
        claim = next(
            (claim for excerpt, claim in quoted.get(source_id or "", []) if excerpt and excerpt in result.text), None
        )
        if claim is None:
            kept.append(result)
            continue
        for leg, value in result.candidate.legs.items():
            claim.candidate.legs[f"evidence.{leg}"] = value
        claim.candidate.fused = max(claim.candidate.fused, result.candidate.fused)
    return kept


def _hydrated(candidates: list[Candidate]) -> list[SearchResult]:
    """The rows behind the candidates (a row gone since it was ranked is dropped), legs carried over."""
    results = []
    for corpus, hydrate in HYDRATORS.items():
        wanted = {c.id: c for c in candidates if c.corpus == corpus}
        if not wanted:
            continue
        for row_id, result in hydrate(list(wanted)).items():
            result.candidate = wanted[row_id]
            results.append(result)
    return results

"""One search over the memories a request can reach: the legs of each corpus, fusion, boosts, hydration.

Personal and reference scopes never mix: a personal search reads only personal rows of every corpus, a
reference search only reference rows. Vectors of another model than the active one are never compared;
rows without one still match by keyword. Runs a fixed number of queries whatever the number of results.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Prefetch
from django.utils import timezone

from memory.access import Access
from memory.models import Chunk, Claim, ClaimStatus, Evidence, Node, NodeType, Scope, SourceScope
from memory.recall import bookkeeping
from memory.recall.fusion import (
    CONVERSATION_BOOST,
    PIN_BOOST,
    Candidate,
    fuse,
    importance_boost,
    rank,
    recency_boost,
)
from memory.recall.legs import CORPORA, Hit, keyword_hits, vector_hits
from memory.recall.terms import query_terms

logger = logging.getLogger("memory.recall")
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


def _node_json(node: Node | None) -> dict[str, Any] | None:
    return None if node is None else {"nodeId": node.pk, "type": node.type, "label": node.label}


def _evidence_json(evidence: Evidence) -> dict[str, Any]:
    return {
        "sourceId": evidence.source_id,
        "excerpt": evidence.excerpt,
        "messageId": evidence.message_id,
        "authoredAt": evidence.authored_at,
    }


def _chunk_evidence(chunk: Chunk) -> dict[str, Any]:
    return {
        "sourceId": chunk.source_id,
        "excerpt": chunk.text[:500],
        "messageId": chunk.message_id,
        "authoredAt": chunk.authored_at or chunk.source.authored_at,
    }


def _conversation_of(source: Any) -> set[str]:
    ids = {source.thread_id, source.external_id}
    if source.parent_id is not None:
        ids.add(source.parent.external_id)
    return ids - {""}


# Large columns a result never shows: vectors, search vectors, whole source texts.
_HEAVY = ("embedding", "search_vector")
_HEAVY_SOURCE = ("content", "markdown", "segments", "source_context", "participants")


def _light_sources(prefix: str) -> list[str]:
    return [f"{prefix}{name}" for name in _HEAVY_SOURCE] + [f"{prefix}parent__{name}" for name in _HEAVY_SOURCE]


def claim_results(ids: list[str]) -> dict[str, SearchResult]:
    evidence = (
        Evidence.objects.select_related("source__parent")
        .defer(*_light_sources("source__"))
        .order_by("authored_at", "id")
    )
    claims = (
        Claim.objects.filter(pk__in=ids)
        .select_related("subject", "partition")
        .defer(*_HEAVY, *(f"subject__{name}" for name in _HEAVY))
    )
    found = {}
    for claim in claims.prefetch_related(Prefetch("evidence", queryset=evidence)):
        refs = list(claim.evidence.all())
        found[claim.pk] = SearchResult(
            candidate=Candidate("claim", claim.pk),
            text=claim.statement,
            time=claim.stated_at or claim.recorded_at,
            partition=claim.partition.key,
            status=claim.status,
            pinned=claim.pinned,
            importance=claim.importance,
            kind=claim.kind,
            node=_node_json(claim.subject),
            evidence=[_evidence_json(ref) for ref in refs],
            conversation_ids=set().union(*(_conversation_of(ref.source) for ref in refs)),
        )
    return found


def chunk_results(ids: list[str]) -> dict[str, SearchResult]:
    found = {}
    chunks = Chunk.objects.filter(pk__in=ids).select_related("source__parent", "partition")
    for chunk in chunks.defer(*_HEAVY, *_light_sources("source__")):
        source = chunk.source
        speaker = f"{chunk.speaker}: " if chunk.speaker and chunk.speaker not in ("user", "assistant") else ""
        found[chunk.pk] = SearchResult(
            candidate=Candidate("chunk", chunk.pk),
            text=f"{speaker}{chunk.text}",
            time=chunk.authored_at or source.occurred_at,
            partition=chunk.partition.key,
            kind=source.kind,
            evidence=[_chunk_evidence(chunk)],
            conversation_ids=_conversation_of(source),
        )
    return found


def node_results(ids: list[str]) -> dict[str, SearchResult]:
    nodes = list(Node.objects.filter(pk__in=ids).select_related("partition").defer(*_HEAVY))
    statuses = dict(
        Claim.objects.filter(
            subject_id__in=[node.pk for node in nodes if node.type == NodeType.TASK],
            predicate="HAS_TASK_STATUS",
            status=ClaimStatus.ACTIVE,
        ).values_list("subject_id", "object_value")
    )
    found = {}
    for node in nodes:
        status = statuses.get(node.pk)
        card = f"{node.type}: {node.label}" + (f" ({status})" if status else "")
        found[node.pk] = SearchResult(
            candidate=Candidate("node", node.pk),
            text=card + (f". {node.summary}" if node.summary else ""),
            time=node.last_seen_at or node.created_at,
            partition=node.partition.key,
            kind=node.type,
            node=_node_json(node),
        )
    return found


HYDRATORS = {"claim": claim_results, "chunk": chunk_results, "node": node_results}


def _embed(query: str) -> tuple[list[float] | None, str]:
    from memory.embeddings import EmbedderUnavailable, get_embedder

    try:
        embedder = get_embedder()
        return embedder.embed_query(query), embedder.model_id
    except EmbedderUnavailable as exc:
        logger.warning("recall.embedder_unavailable", extra={"reason": str(exc)})
        return None, ""


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
    terms = query_terms(request.query) if request.use_keyword else []
    keyword: list[Hit] = []
    for corpus in CORPORA:
        keyword += keyword_hits(corpus, terms, params, since, depth)
    semantic: list[Hit] = []
    vector, model_id = _embed(request.query) if request.use_vector else (None, "")
    if vector is not None:
        for corpus in CORPORA:
            semantic += vector_hits(corpus, vector, model_id, params, since, depth)
    weights = {"keyword": settings.SEARCH_KEYWORD_WEIGHT, "vector": settings.SEARCH_VECTOR_WEIGHT}
    candidates = fuse({"keyword": rank(keyword), "vector": rank(semantic)}, weights)
    # Boosts move memories of similar relevance; only the best by relevance are worth reading in full.
    candidates.sort(key=lambda candidate: (-candidate.fused, candidate.corpus, candidate.id))
    results = _hydrated(candidates[: max(limit * 2, 16)])
    now = timezone.now()
    for result in results:
        boosts = result.candidate.boosts
        boosts["recency"] = recency_boost(result.time, now)
        boosts["pinned"] = PIN_BOOST if result.pinned else 0.0
        if result.type == "claim":
            boosts["importance"] = importance_boost(result.importance)
        if request.conversation_id and request.conversation_id in result.conversation_ids:
            boosts["conversation"] = CONVERSATION_BOOST
    results = _folded(results)
    results.sort(key=lambda result: (-result.candidate.score, result.type, result.candidate.id))
    chosen = results[:limit]
    bookkeeping.note_access([result.candidate.id for result in chosen if result.type == "claim"])
    return chosen


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

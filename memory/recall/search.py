"""One search over the memories a request can reach: the legs of each corpus, fusion, boosts, hydration.

Personal and reference scopes never mix: a personal search reads only personal rows of every corpus, a
reference search only reference rows. Vectors of another model than the active one are never compared;
rows without one still match by keyword. Runs a fixed number of queries whatever the number of results.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from memory.access import Access
from memory.models import Scope, SourceScope
from memory.recall import bookkeeping, held_vectors
from memory.recall.anchors import anchor_keys, first_name, reference_time, speakers_named
from memory.recall.caching import read_ahead
from memory.recall.corpora import CORPORA, Span
from memory.recall.fusion import (
    CONVERSATION_BOOST,
    PIN_BOOST,
    SPEAKER_BOOST,
    WINDOW_BOOST,
    fuse,
    importance_boost,
    rank,
    recency_boost,
)
from memory.recall.legs import Hit, keyword_hits_within, searched_exactly, vector_hits_within
from memory.recall.question import Window, asked_window
from memory.recall.results import SearchResult, hydrated
from memory.recall.terms import query_terms
from memory.recall.threads import process_pool, searching
from memory.recall.warm_up import search_note
from memory.recall.word_statistics import statistics_keys

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


def query_vector(query: str) -> tuple[list[float] | None, str]:
    """The query's vector by the active embedder and its model id; (None, "") when it is unavailable."""
    return _embedded(_query_run(query))


def _query_run(query: str) -> tuple[Callable[[], list[float]], str] | None:
    """The first step of embedding the query, done on this thread (memory.embeddings.Embedder.query_run), and the
    model's id; None when the embedder is unavailable."""
    from memory.embeddings import EmbedderUnavailable, get_embedder

    try:
        embedder = get_embedder()
        return embedder.query_run(query), embedder.model_id
    except EmbedderUnavailable as exc:
        _unavailable(exc)
        return None


def _embedded(
    run: tuple[Callable[[], list[float]], str] | None, started: threading.Event | None = None
) -> tuple[list[float] | None, str]:
    from memory.embeddings import EmbedderUnavailable

    if started is not None:
        started.set()
    if run is None:
        return None, ""
    rest, model_id = run
    try:
        vector = rest()
    except EmbedderUnavailable as exc:
        _unavailable(exc)
        return None, ""
    search_note()
    return vector, model_id


def _unavailable(exc: Exception) -> None:
    logger.warning("recall.embedder_unavailable", extra={"reason": str(exc)})


# The rest of a query's embedding (a few ms of onnxruntime, which lets the interpreter go, or a remote call) runs on
# one of these threads while the request's own thread cuts the words and runs the keyword legs.
EMBEDDING_THREADS = 4


# How long the request's thread waits for the embedding's thread to take up its work, at most: about what that thread
# would otherwise wait for the interpreter; a search that finds every embedding thread busy goes on after it.
EMBEDDING_TAKEN_UP_S = 0.0005


def _embedding_started(query: str) -> Future[tuple[list[float] | None, str]]:
    run = _query_run(query)
    if run is None:
        unavailable: Future[tuple[list[float] | None, str]] = Future()
        unavailable.set_result((None, ""))
        return unavailable
    started = threading.Event()
    embedding = process_pool("query-embedding", EMBEDDING_THREADS).submit(_embedded, run, started)
    # Until that thread has the interpreter and starts the run, which lets it go: had this thread gone on running
    # Python, that thread would wait for the interpreter meanwhile (~0.5 ms; docs/benchmarks.md, issue 18,
    # thirty-seventh pass).
    started.wait(EMBEDDING_TAKEN_UP_S)
    return embedding


def search(access: Access, request: SearchRequest) -> list[SearchResult]:
    """The best `limit` memories for the query, best first."""
    with searching():  # the counts it hands on start once it has ended (memory.recall.threads)
        return _best(access, request)


def _best(access: Access, request: SearchRequest) -> list[SearchResult]:
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
        ahead = [*statistics_keys(CORPORA, terms, params), *anchor_keys(params), *held_vectors.keys(access.user.pk)]
        with read_ahead(ahead):
            reference = reference_time(params)
            # The time the question names ("in May") brings its own candidates, found within it, besides the rest.
            window = asked_window(request.query, reference)
            between: list[Span] = [(since, None)]
            if window is not None and (since is None or window.end > since):
                between.append((max(filter(None, (since, window.start))), window.end))
            # Each leg is one statement for the three corpora and every window (more only when a corpus's first
            # keyword candidates are too few), or none where this process holds a small reach's rows; the keyword
            # leg runs while the query is being embedded.
            held = held_vectors.keyword_scorer(CORPORA, terms, params) if searched_exactly(CORPORA, params) else None
            keyword = _united(*keyword_hits_within(CORPORA, terms, params, between, depth, held=held))
            exact = searched_exactly(CORPORA, params)  # again: the keyword leg may have counted the owner's rows
            held_results = held_vectors.results_held(CORPORA, params) if exact else None  # its results' rows
            speakers = speakers_named(params, terms)  # while the query may still be embedded
            vector, model_id = embedding.result() if embedding else (None, "")
            semantic = []
            if vector is not None:
                semantic = _united(*_nearest(vector, model_id, params, between, depth, exact=exact))
    finally:
        if embedding is not None:
            embedding.cancel()  # a failure before its result was needed: nothing waits for it
    weights = {"keyword": settings.SEARCH_KEYWORD_WEIGHT, "vector": settings.SEARCH_VECTOR_WEIGHT}
    candidates = fuse({"keyword": rank(keyword), "vector": rank(semantic)}, weights)
    # Boosts move memories of similar relevance; only the best by relevance are worth reading in full.
    candidates.sort(key=lambda candidate: (-candidate.fused, candidate.corpus, candidate.id))
    # A claim read by id and retired since it was ranked is left out, as the legs leave it out (a held copy shows
    # its claims as it holds them: memory.recall.held_vectors).
    results = [
        result for result in hydrated(candidates[: max(limit * 2, 16)], held_results) if result.status == "active"
    ]
    _boosted(results, request, min(window.end, reference) if window else reference, window, speakers)
    results = _composed(_folded(results), request.query)
    chosen = results[:limit]
    bookkeeping.note_access([result.candidate.id for result in chosen if result.type == "claim"])
    return chosen


def _nearest(
    vector: list[float], model_id: str, params: dict[str, Any], between: list[Span], depth: int, *, exact: bool
) -> list[list[Hit]]:
    """The vector leg: a small reach (`exact`: legs.searched_exactly) from the copy of its vectors this process holds,
    where it holds a current one; else one statement, reading every row in reach of a small one or the HNSW index of
    a larger one."""
    held = held_vectors.nearest_within(CORPORA, vector, model_id, params, between, depth) if exact else None
    if held is not None:
        return held
    return vector_hits_within(CORPORA, vector, model_id, params, between, depth, exact=exact)


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

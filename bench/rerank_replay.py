"""Learned fusion for bench/rerank_eval.py: search()'s fusion replayed offline, and a 2-fold grid over it.

Each question's two legs (keyword and vector, every corpus, search()'s default depth) are read once and every
candidate hydrated once with search()'s own functions; the fusion, the cut before hydration, the boosts, the
folding of a chunk into the claim quoting it and the final order are then recomputed in Python for each
setting of the grid: the keyword and vector weights, the RRF K and a weight per result type (0 drops it).
The replay at the default settings is checked against search() itself (the share of identical top 10s).

Fitting: the setting with the best mean frac@10 on one conversation's questions (ties: the first in grid
order, which starts at the defaults) is scored on the other conversation's questions, both ways. Only the
held-out numbers count.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass, field
from typing import Any

DEFAULT = (1.0, 0.3, 60, 1.0, 1.0, 1.0)  # keyword weight, vector weight, K, claim, chunk, node weights
VECTOR_WEIGHTS = (0.3, 0.0, 0.1, 0.2, 0.5, 0.75, 1.0)
KS = (60, 5, 10, 20, 40, 120)
CLAIM_WEIGHTS = (1.0, 0.5, 1.5)
NODE_WEIGHTS = (1.0, 0.0, 0.5)


@dataclass
class Question:
    key: str
    fold: int
    category: str
    text: str
    evidence: list[str]
    access: Any
    baseline: list[str] = field(default_factory=list)
    vectors: dict[str, list[str]] = field(default_factory=dict)  # model -> its first 40 chunk ids
    legs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # leg -> ranked (corpus, id)
    items: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


def collect(question: Question) -> None:
    """The legs and hydrated candidates of one question, as search() computes them for limit 10."""
    from django.conf import settings
    from django.utils import timezone

    from memory.recall.corpora import CORPORA
    from memory.recall.fusion import PIN_BOOST, importance_boost, rank, recency_boost
    from memory.recall.legs import keyword_hits, vector_hits
    from memory.recall.results import HYDRATORS
    from memory.recall.search import query_vector
    from memory.recall.terms import query_terms

    access = question.access
    depth = max(settings.SEARCH_CANDIDATES, 10 * 4)
    params = {"owner": access.user.pk, "partitions": [p.pk for p in access.read_partitions],
              "scope": "personal", "excluded": []}  # fmt: skip
    terms = query_terms(question.text)
    keyword = [hit for corpus in CORPORA for hit in keyword_hits(corpus, terms, params, None, depth)]
    vector, model_id = query_vector(question.text)
    semantic = vector_hits(CORPORA, vector, model_id, params, None, depth) if vector is not None else []
    question.legs = {"keyword": [(h.corpus, h.id) for h in rank(keyword)],
                     "vector": [(h.corpus, h.id) for h in rank(semantic)]}  # fmt: skip
    for name, chunk_ids in question.vectors.items():  # a candidate model's vector leg, over chunks only
        question.legs[f"vector:{name}"] = [("chunk", chunk_id) for chunk_id in chunk_ids]
    wanted = {key for hits in question.legs.values() for key in hits}
    now = timezone.now()
    results = {}
    for corpus, hydrate in HYDRATORS.items():
        for row_id, result in hydrate([i for c, i in wanted if c == corpus]).items():
            results[(corpus, row_id)] = result
    for key, result in results.items():
        boost = recency_boost(result.time, now) + (PIN_BOOST if result.pinned else 0.0)
        if key[0] == "claim":
            boost += importance_boost(result.importance)
        ids = [ref["messageId"] for ref in result.evidence if ref["messageId"]]
        question.items[key] = {"boost": boost, "ids": list(dict.fromkeys(ids)), "absorbed_by": []}
    for key, result in results.items():
        if key[0] != "chunk":
            continue
        source = result.evidence[0]["sourceId"]
        for other, claim in results.items():
            if other[0] == "claim" and any(
                ref["sourceId"] == source and ref["excerpt"] and ref["excerpt"] in result.text for ref in claim.evidence
            ):
                question.items[key]["absorbed_by"].append(other)


def replay(question: Question, setting: tuple[float, ...], vector_leg: str = "vector") -> list[str]:
    """The message ids of the first 10 results under one setting of the fusion; `vector_leg` names the
    ranking used as the vector leg (search()'s own, or "vector:<model>" over chunks)."""
    keyword_weight, vector_weight, k, *type_weights = setting
    per_type = dict(zip(("claim", "chunk", "node"), type_weights, strict=True))
    weights = {"keyword": keyword_weight, vector_leg: vector_weight}
    used = {leg: w for leg, w in weights.items() if question.legs[leg] and w > 0}
    best = sum(w / (k + 1) for w in used.values()) or 1.0
    fused: dict[tuple[str, str], float] = {}
    for leg, weight in used.items():
        for position, key in enumerate(question.legs[leg], start=1):
            fused[key] = fused.get(key, 0.0) + weight / (k + position) / best
    fused = {key: value * per_type[key[0]] for key, value in fused.items() if per_type[key[0]] > 0}
    cut = [key for key in sorted(fused, key=lambda key: (-fused[key], key)) if key in question.items][:20]
    chosen = set(cut)
    final = {key: fused[key] for key in cut}
    for key in cut:
        absorbing = [claim for claim in question.items[key]["absorbed_by"] if claim in chosen]
        if key[0] == "chunk" and absorbing:
            final[absorbing[0]] = max(final[absorbing[0]], fused[key])
            del final[key]
    order = sorted(final, key=lambda key: (-(final[key] + question.items[key]["boost"]), key[0], key[1]))
    ids: list[str] = []
    for key in order[:10]:
        ids += [message for message in question.items[key]["ids"] if message not in ids]
    return ids


def replay_ids(questions: list[Question]) -> float:
    for question in questions:
        collect(question)
    return statistics.fmean(replay(q, DEFAULT)[:10] == q.baseline[:10] for q in questions)


def fit_fusion(questions: list[Question], table: Any) -> list[str]:
    from bench.locomo import score

    def frac(ids: list[str], evidence: list[str]) -> float:
        return score(ids[:10], evidence)[2]

    grid: list[tuple[float, ...]] = list(
        itertools.product((1.0,), VECTOR_WEIGHTS, KS, CLAIM_WEIGHTS, (1.0,), NODE_WEIGHTS)
    )
    lines = [f"\nlearned fusion: {len(grid)} settings (keyword 1, vector {VECTOR_WEIGHTS}, K {KS}, "
             f"claim {CLAIM_WEIGHTS}, node {NODE_WEIGHTS})"]  # fmt: skip
    legs = ["vector", *sorted({leg for q in questions for leg in q.legs if leg.startswith("vector:")})]
    for leg in legs:
        label = "search()'s vector leg (MiniLM, every corpus)" if leg == "vector" else f"{leg[7:]} over chunks"
        values = {setting: [frac(replay(q, setting, leg), q.evidence) for q in questions] for setting in grid}
        for position, q in enumerate(questions):
            table.add(f"replay, default fusion, vector leg: {label}", q, values[DEFAULT][position])
        for train in sorted({q.fold for q in questions}):
            inside = [i for i, q in enumerate(questions) if q.fold == train]
            outside = [i for i, q in enumerate(questions) if q.fold != train]

            def mean(
                setting: tuple[float, ...], positions: list[int], values: dict[Any, list[float]] = values
            ) -> float:
                return statistics.fmean(values[setting][i] for i in positions)

            chosen = max(grid, key=lambda setting: mean(setting, inside))  # max keeps the first of equals
            for i in outside:
                table.add(f"learned fusion, held-out (2-fold), vector leg: {label}", questions[i], values[chosen][i])
            for i in inside:
                table.add(f"learned fusion, training fold (not counted), vector leg: {label}", questions[i],
                          values[chosen][i])  # fmt: skip
            lines.append(
                f"{label}: fit on fold {train}: vector {chosen[1]}, K {chosen[2]}, claim {chosen[3]}, "
                f"node {chosen[5]}; train {mean(chosen, inside):.3f} (default {mean(DEFAULT, inside):.3f}), "
                f"held-out {mean(chosen, outside):.3f} (default {mean(DEFAULT, outside):.3f})"
            )
        top = sorted(grid, key=lambda setting: -statistics.fmean(values[setting]))[:3]
        lines += [f"  {label}, whole dev set (not a fit): {s} -> {statistics.fmean(values[s]):.3f}" for s in top]
    return lines

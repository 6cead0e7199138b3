"""Weighted reciprocal-rank fusion of the keyword and vector rankings, then boosts. Pure functions.

A candidate's fused score is Σ weight / (K + rank) over the legs it appears in, divided by the best score
possible (rank 1 in every leg), so it lies in 0 to 1 and the boosts below have a stable meaning:
- recency: up to +0.1, falling linearly to 0 over 365 days before the reference time (the newest memory in
  reach, or the end of the time the question asks about);
- when: +0.1 for a memory from the time the question asks about ("in May", "on 13 October");
- speaker: +0.05 for a turn said by a person the question names;
- importance: (importance - 3) * 0.02 for claims;
- pinned: +0.1;
- conversation: +0.1 when the memory comes from the conversation the host named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from memory.recall.legs import Hit

K = 60
RECENCY_BOOST, RECENCY_DAYS = 0.1, 365
IMPORTANCE_STEP = 0.02
PIN_BOOST = 0.1
CONVERSATION_BOOST = 0.1
WINDOW_BOOST = 0.1
SPEAKER_BOOST = 0.05


@dataclass
class Candidate:
    corpus: str
    id: str
    legs: dict[str, dict[str, float]] = field(default_factory=dict)  # leg -> {"rank", "score"}
    fused: float = 0.0
    boosts: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.corpus, self.id)

    @property
    def score(self) -> float:
        return self.fused + sum(self.boosts.values())


def rank(hits: list[Hit]) -> list[Hit]:
    """One ranking from the hits of every corpus: best score first, ties in a stable order."""
    return sorted(hits, key=lambda hit: (-hit.score, hit.corpus, hit.id))


def fuse(rankings: dict[str, list[Hit]], weights: dict[str, float]) -> list[Candidate]:
    candidates: dict[tuple[str, str], Candidate] = {}
    used = {leg: weights[leg] for leg, hits in rankings.items() if hits and weights.get(leg, 0) > 0}
    best = sum(weight / (K + 1) for weight in used.values()) or 1.0
    for leg, weight in used.items():
        for position, hit in enumerate(rankings[leg], start=1):
            candidate = candidates.setdefault((hit.corpus, hit.id), Candidate(hit.corpus, hit.id))
            candidate.legs[leg] = {"rank": position, "score": round(hit.score, 6)}
            candidate.fused += weight / (K + position) / best
    return list(candidates.values())


def recency_boost(when: datetime | None, reference: datetime) -> float:
    if when is None:
        return 0.0
    age_days = max(0.0, (reference - when).total_seconds() / 86400)
    return round(RECENCY_BOOST * max(0.0, 1 - age_days / RECENCY_DAYS), 6)


def importance_boost(importance: int | None) -> float:
    return round((importance - 3) * IMPORTANCE_STEP, 6) if importance else 0.0

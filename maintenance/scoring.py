"""The stale-node score of seeds/000 and its four terms (docs/architecture.md "Maintenance and data rights").

Pure functions over plain numbers and one `NodeFacts` summary: no queries, no clock. Each term is in [0, 1];
the score is their weighted sum, so it is in [0, 1] too. The facts are gathered in maintenance/pruning.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

WEIGHTS = {"staleness": 0.40, "isolation": 0.25, "weakProvenance": 0.20, "claimDecay": 0.15}
AGGRESSIVENESS = {"low": 0.25, "medium": 0.5, "high": 0.75}
YEAR_DAYS = 365


@dataclass(frozen=True)
class NodeFacts:
    """What the score reads of one node, over its claims as subject or object (suggested and quarantined
    claims are neither current nor past: they wait for review and are left out of both shares)."""

    idle_days: float  # since the newest of last seen, a claim read, and the newest evidence
    linked_nodes: int  # distinct other nodes linked by current claims
    current_claims: int  # active and not past expires_at
    current_trusted: int  # of those, user_stated or manual
    past_claims: int  # superseded, expired (or past expires_at), retracted


@dataclass(frozen=True)
class Terms:
    staleness: float
    isolation: float
    weak_provenance: float
    claim_decay: float

    @property
    def score(self) -> float:
        return weighted_score(self)

    def as_dict(self) -> dict[str, float]:
        return {
            "staleness": round(self.staleness, 4),
            "isolation": round(self.isolation, 4),
            "weakProvenance": round(self.weak_provenance, 4),
            "claimDecay": round(self.claim_decay, 4),
        }


def idle_days(newest: datetime, now: datetime) -> float:
    """Days between the node's newest sign of life and `now` (never negative: a future time is now)."""
    return max(0.0, (now - newest).total_seconds() / 86400)


def staleness(idle: float) -> float:
    """min(1, idle days / 365): a year without a sign of life is fully stale."""
    return min(1.0, max(0.0, idle) / YEAR_DAYS)


def isolation(linked_nodes: int) -> float:
    """1 / (1 + distinct other nodes linked by current claims): 1 when linked to nothing."""
    return 1.0 / (1 + max(0, linked_nodes))


def weak_provenance(current_claims: int, current_trusted: int) -> float:
    """Share of current claims not in the owner's own words (user_stated / manual); 1 when it has none."""
    if current_claims <= 0:
        return 1.0
    return (current_claims - min(current_trusted, current_claims)) / current_claims


def claim_decay(current_claims: int, past_claims: int) -> float:
    """Share of its claims no longer current (superseded, expired, retracted); 1 when it has none."""
    total = current_claims + past_claims
    return 1.0 if total <= 0 else past_claims / total


def terms_of(facts: NodeFacts) -> Terms:
    return Terms(
        staleness=staleness(facts.idle_days),
        isolation=isolation(facts.linked_nodes),
        weak_provenance=weak_provenance(facts.current_claims, facts.current_trusted),
        claim_decay=claim_decay(facts.current_claims, facts.past_claims),
    )


def fewest_idle_days(min_score: float) -> float:
    """The fewest idle days at which a node can score `min_score`, its other terms at their most (1), less what the
    score's rounding to four places can add: a node idle fewer days scores below it."""
    others = sum(weight for name, weight in WEIGHTS.items() if name != "staleness")
    needed = (min_score - 0.0001 - others) / WEIGHTS["staleness"]
    return min(1.0, max(0.0, needed)) * YEAR_DAYS


def weighted_score(terms: Terms) -> float:
    """0.40·staleness + 0.25·isolation + 0.20·weakProvenance + 0.15·claimDecay."""
    return (
        WEIGHTS["staleness"] * terms.staleness
        + WEIGHTS["isolation"] * terms.isolation
        + WEIGHTS["weakProvenance"] * terms.weak_provenance
        + WEIGHTS["claimDecay"] * terms.claim_decay
    )


def min_score_for(aggressiveness: str | float) -> float:
    """The score floor of an aggressiveness (low / medium / high, or a number in [0, 1]; higher prunes more):
    0.9 - 0.5·a, so low 0.775, medium 0.65, high 0.525."""
    level = AGGRESSIVENESS[aggressiveness] if isinstance(aggressiveness, str) else float(aggressiveness)
    if not 0.0 <= level <= 1.0:
        raise ValueError(f"aggressiveness {aggressiveness!r} is outside [0, 1]")
    return round(0.9 - 0.5 * level, 6)


def _months(days: float) -> str:
    if days < 60:
        return f"{int(days)} days"
    return f"{int(days // 30.44)} months"


def reason_words(facts: NodeFacts) -> str:
    """Why a node scores as it does, in words ("not seen for 14 months; linked to nothing; 3 of 3 claims
    inferred; 2 of 3 claims no longer current")."""
    parts = [f"not seen for {_months(facts.idle_days)}"]
    linked = facts.linked_nodes
    parts.append("linked to nothing" if linked == 0 else f"linked to {linked} node{'s' if linked != 1 else ''}")
    if facts.current_claims == 0 and facts.past_claims == 0:
        parts.append("no claims")
    else:
        if facts.current_claims:
            inferred = facts.current_claims - facts.current_trusted
            parts.append(f"{inferred} of {facts.current_claims} current claims inferred")
        total = facts.current_claims + facts.past_claims
        parts.append(f"{facts.past_claims} of {total} claims no longer current")
    return "; ".join(parts)

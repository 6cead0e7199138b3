"""The stale-node score of seeds/000 and its four terms, as pure functions (docs/architecture.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from maintenance.scoring import (
    NodeFacts,
    Terms,
    claim_decay,
    fewest_idle_days,
    idle_days,
    isolation,
    min_score_for,
    reason_words,
    staleness,
    terms_of,
    weak_provenance,
    weighted_score,
)

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def test_staleness_grows_with_idle_days_to_one_at_a_year() -> None:
    assert staleness(0) == 0
    assert staleness(73) == pytest.approx(0.2)
    assert staleness(365) == 1
    assert staleness(900) == 1
    assert idle_days(NOW - timedelta(days=10, hours=12), NOW) == pytest.approx(10.5)
    assert idle_days(NOW + timedelta(days=3), NOW) == 0  # a future time is now


def test_isolation_is_one_over_one_plus_linked_nodes() -> None:
    assert [isolation(n) for n in (0, 1, 3)] == [1.0, 0.5, 0.25]


def test_weak_provenance_is_the_share_of_current_claims_not_in_the_owners_words() -> None:
    assert weak_provenance(0, 0) == 1.0  # no claims: nothing vouches for it
    assert weak_provenance(3, 3) == 0.0
    assert weak_provenance(4, 1) == 0.75


def test_claim_decay_is_the_share_of_claims_no_longer_current() -> None:
    assert claim_decay(0, 0) == 1.0
    assert claim_decay(1, 2) == pytest.approx(2 / 3)
    assert claim_decay(5, 0) == 0.0


def test_the_score_weighs_the_terms_040_025_020_015() -> None:
    terms = Terms(staleness=0.5, isolation=0.5, weak_provenance=0.25, claim_decay=1.0)
    assert weighted_score(terms) == pytest.approx(0.40 * 0.5 + 0.25 * 0.5 + 0.20 * 0.25 + 0.15 * 1.0)
    assert weighted_score(Terms(1, 1, 1, 1)) == pytest.approx(1.0)
    assert weighted_score(Terms(0, 0, 0, 0)) == 0.0
    facts = NodeFacts(idle_days=365, linked_nodes=1, current_claims=2, current_trusted=1, past_claims=2)
    assert terms_of(facts).as_dict() == {"staleness": 1.0, "isolation": 0.5, "weakProvenance": 0.5, "claimDecay": 0.5}
    assert terms_of(facts).score == pytest.approx(0.40 + 0.125 + 0.10 + 0.075)


def test_aggressiveness_sets_the_score_floor() -> None:
    assert [min_score_for(level) for level in ("low", "medium", "high")] == [0.775, 0.65, 0.525]
    assert min_score_for(0) == 0.9 and min_score_for(1.0) == 0.4
    with pytest.raises(ValueError, match="outside"):
        min_score_for(1.5)


def test_the_reason_says_why_in_words() -> None:
    facts = NodeFacts(idle_days=430, linked_nodes=0, current_claims=1, current_trusted=0, past_claims=2)
    assert reason_words(facts) == (
        "not seen for 14 months; linked to nothing; 1 of 1 current claims inferred; 2 of 3 claims no longer current"
    )
    bare = NodeFacts(idle_days=45, linked_nodes=2, current_claims=0, current_trusted=0, past_claims=0)
    assert reason_words(bare) == "not seen for 45 days; linked to 2 nodes; no claims"


@pytest.mark.parametrize("min_score", [0.3, 0.6, 0.6001, 0.61, 0.525, 0.65, 0.775, 0.9, 0.9999])
def test_fewest_idle_days_is_a_tight_floor_under_the_rounded_score(min_score: float) -> None:
    """A node idle fewer days than the floor scores below `min_score` even at its most isolated, weakest and most
    decayed, as the pruner rounds its score; a quarter of a day past the floor, such a node reaches it."""
    days = fewest_idle_days(min_score)

    def rounded(idle: float) -> float:
        facts = NodeFacts(idle_days=idle, linked_nodes=0, current_claims=0, current_trusted=0, past_claims=0)
        return round(terms_of(facts).score, 4)

    if min_score <= 0.6:
        assert days == 0  # the other terms reach it alone
        return
    assert rounded(days - 0.001) < min_score
    assert rounded(days + 0.25) >= min_score

"""bench/locomo.py maps search results to message ids the same way for both paths (in-process and REST)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.locomo import message_ids, sample_named, scored_ids


def result(kind: str, *messages: str | None) -> dict[str, Any]:
    """A result as `/query/search` returns it (and `SearchResult.as_json()` in-process): only what is scored."""
    return {"type": kind, "evidence": [{"sourceId": "src", "messageId": message} for message in messages]}


RANKED = [
    result("node"),  # a node card carries no evidence
    result("claim", "D2:4", "D1:3"),  # a claim gives its evidence messages, in their order
    result("chunk", "D1:3"),  # the same turn again
    result("chunk", None),  # a piece of a document: no message
    result("chunk", "D5:1"),
    result("chunk", "D1:1"),
]


def test_message_ids_keep_rank_order_and_drop_node_cards_and_repeats() -> None:
    assert message_ids(RANKED) == ["D2:4", "D1:3", "D5:1", "D1:1"]


def test_results_protocol_scores_the_ids_of_the_first_k_results() -> None:
    found = scored_ids(RANKED, protocol="results", cuts=(3, 6))

    assert found == {3: ["D2:4", "D1:3"], 6: ["D2:4", "D1:3", "D5:1", "D1:1"]}


def test_evidence_protocol_scores_the_first_k_distinct_ids_of_all_results() -> None:
    found = scored_ids(RANKED, protocol="evidence", cuts=(3, 6))

    assert found == {3: ["D2:4", "D1:3", "D5:1"], 6: ["D2:4", "D1:3", "D5:1", "D1:1"]}


def test_a_sample_is_found_by_its_id_and_an_unknown_one_ends_the_run_naming_the_known(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([{"sample_id": "conv-1", "qa": []}, {"sample_id": "conv-2", "qa": [1]}]))
    assert sample_named(data, "conv-2") == {"sample_id": "conv-2", "qa": [1]}
    with pytest.raises(SystemExit, match=r"no sample 'conv-9' in .*locomo.json: \['conv-1', 'conv-2'\]"):
        sample_named(data, "conv-9")

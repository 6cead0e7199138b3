"""bench/peers.py gives both sides the same turns and questions, and scores their results the same way."""

from __future__ import annotations

from typing import Any

import pytest

from bench.peers import frac_at_10, peer_job

SAMPLE: dict[str, Any] = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "Back from Lisbon."}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "What is its name?"},
        ],
    },
    "qa": [
        {"question": "Where was Bob?", "evidence": ["D2:1"], "category": 4},
        {"question": "Which pets?", "evidence": ["D1:1; D2:01"], "category": 1},
        {"question": "Adversarial?", "evidence": ["D1:1"], "category": 5},
        {"question": "No evidence?", "evidence": [], "category": 2},
    ],
}


def test_peer_job_orders_sessions_and_gives_the_first_speaker_the_user_role() -> None:
    turns, _ = peer_job(SAMPLE)

    assert [(t["dia_id"], t["role"], t["session"]) for t in turns] == [
        ("D1:1", "user", 1),
        ("D1:2", "assistant", 1),
        ("D2:1", "assistant", 2),
    ]
    assert turns[0]["timestamp"] == "2023-05-08T13:56:00+00:00"
    assert turns[1]["timestamp"] == "2023-05-08T13:56:30+00:00"


def test_peer_job_asks_categories_one_to_four_with_normalised_evidence() -> None:
    _, questions = peer_job(SAMPLE)

    assert [(q["question"], q["evidence"], q["category"]) for q in questions] == [
        ("Where was Bob?", ["D2:1"], 4),
        ("Which pets?", ["D1:1", "D2:1"], 1),
    ]


def test_frac_at_10_scores_the_ids_of_the_first_ten_results_only() -> None:
    _, questions = peer_job(SAMPLE)
    # Per question its results in rank order, each as the dia ids it points at (a node card: none).
    found = [[["D9:9"]] * 10 + [["D2:1"]], [["D1:1"], [], ["D1:1", "D2:1"]]]

    overall, per_category = frac_at_10(questions, found)

    assert per_category == {"single-hop": 0.0, "multi-hop": 1.0}
    assert overall == 0.5


def test_peak_memory_names_each_postgresql_process_by_its_role(db: None) -> None:
    from django.conf import settings
    from django.db import connection

    from bench.peers import PeakMemory

    connection.ensure_connection()  # this test's own backend is one of the postmaster's children
    postmaster = int((settings.EMBEDDED_RUNTIME.pgdata / "postmaster.pid").read_text().split()[0])
    rss, pss, parts = PeakMemory(lambda: [postmaster]).sample()
    assert {"postgres postmaster", "postgres backend", "postgres checkpointer"} <= set(parts)
    assert 0 < pss <= rss and abs(sum(parts.values()) - pss) < 1e-6 * pss + 1e-9


def test_served_rows_use_mem0s_served_seconds_and_ours_over_rest() -> None:
    from bench.peers import measured

    _, questions = peer_job(SAMPLE)
    found = [[["D2:1"]], [["D1:1"], ["D2:1"]]]
    common = {"ingest_seconds": 1.0, "embed_seconds": [0.001], "peak_rss": 1.0, "peak_pss": 1.0, "found": found}
    mem0 = measured(
        common
        | {"query_seconds": [0.005, 0.007], "served_seconds": [0.009, 0.011], "served_found": [[], []]}
        | {"again_seconds": [0.004, 0.006]},
        3,
        questions,
    )
    rest = [0.010, 0.012]
    ours = measured(
        common
        | {"query_seconds": rest, "served_seconds": rest, "served_found": found, "in_process_seconds": [0.004]}
        | {"again_seconds": [0.008, 0.010]},
        3,
        questions,
    )

    assert (mem0["p50"], mem0["served_p50"], mem0["in_process_p50"]) == pytest.approx((6.0, 10.0, 6.0))
    assert (mem0["p95"], mem0["served_p95"]) == pytest.approx((6.9, 10.9))  # interpolated between the two
    assert (mem0["frac"], mem0["served_frac"]) == (1.0, 0.0)  # each side's answers scored as they came
    assert (ours["p50"], ours["served_p50"], ours["in_process_p50"]) == pytest.approx((11.0, 11.0, 4.0))
    assert ours["served_frac"] == ours["frac"] == 1.0
    # The questions asked again: ours over REST, mem0 in process, each side's second pass.
    assert (ours["again_p50"], mem0["again_p50"]) == pytest.approx((9.0, 5.0))


def test_the_report_puts_each_rows_figures_of_both_sides_beside_their_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.peers import report

    figures = {"ingest": 200.0, "ingest_polled": 190.0, "p50": 10.0, "p95": 16.0, "served_p50": 10.0,
               "served_p95": 16.0, "in_process_p50": 5.0, "again_p50": 9.0, "embed_p50": 1.0, "frac": 0.75,
               "served_frac": 0.75, "rss": 800.0, "pss": 400.0, "per_category": {}}  # fmt: skip
    peer = figures | {"ingest": 100.0, "p50": 5.0, "served_p50": 8.0, "in_process_p50": 5.0, "frac": 0.5, "pss": 320.0}
    peer["again_p50"] = 5.0
    ours_raw = {"migrate_seconds": 1.0, "stored": {}, "embedder": "minilm", "failed": 0, "planner_statistics": {},
                "peak_parts": {}}  # fmt: skip
    peer_raw = {"version": "mem0ai", "stored": 1, "notes": [], "peak_parts": {}}

    side = "mem0 speaker"
    report([{"ours": figures, side: peer}], [{"ours": ours_raw, side: peer_raw}], "", side)

    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:4] for line in capsys.readouterr().out.splitlines()}
    assert rows["ingest, turns/s end to end"] == ["200.0", "100.0", "2.00"]
    assert rows["query p50, ms (ours over REST, mem0 in process)"] == ["10.0", "5.0", "2.00"]
    served = "query p50, both served over HTTP (mem0: FastAPI + uvicorn, as its REST server), ms"
    assert rows[served] == ["10.0", "8.0", "1.25"]
    again = "query p50, the questions asked again (ours over REST, their words counted; mem0 in process), ms"
    assert rows[again] == ["9.0", "5.0", "1.80"]
    assert rows["frac@10, categories 1-4"] == ["0.750", "0.500", "1.50"]
    assert rows["peak memory PSS, MiB (all processes)"] == ["400.0", "320.0", "1.25"]


def test_mem0_results_are_read_as_the_dia_ids_of_their_turns() -> None:
    from bench.peers_mem0 import dia_ids

    results: list[dict[str, Any]] = [{"metadata": {"dia_id": "D1:1"}}, {"metadata": None}, {"memory": "no metadata"}]

    assert dia_ids(results) == [["D1:1"], [], []]


def test_timed_gives_each_answer_in_order_with_the_seconds_it_took() -> None:
    from bench.peers_mem0 import timed

    clock = iter([10.0, 10.5, 20.0, 20.0, 30.0, 30.25])  # each item's start and end, as the clock reads them
    seconds, answers = timed(lambda item: item * 2, [2, 0, 1], clock=lambda: next(clock))
    assert answers == [4, 0, 2]
    assert seconds == [0.5, 0.0, 0.25]

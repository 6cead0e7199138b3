from __future__ import annotations

from bench.report import headline, headlines


def test_headlines_printed_by_a_script_are_gathered_in_order(capsys) -> None:
    print("| a table | 1 |")
    headline("POST /whoami p50 over HTTP", 2.123, "ms", "<= 5")
    headline("ingest end to end", 151, "messages/s")
    assert headlines(capsys.readouterr().out) == [
        {"metric": "POST /whoami p50 over HTTP", "value": 2.12, "unit": "ms", "goal": "<= 5"},
        {"metric": "ingest end to end", "value": 151, "unit": "messages/s", "goal": ""},
    ]

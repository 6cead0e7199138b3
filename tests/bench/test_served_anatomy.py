"""bench/served_anatomy.py splits a served request at its clock reads; bench/serving.py gives a compared server
caches of its own."""

from __future__ import annotations

import pytest

from bench.served_anatomy import LANE_PARTS, PARTS, report
from bench.serving import redis_database


def _clock(start: float, steps_ms: list[float], parts: list[tuple[str, str, str]] = PARTS) -> dict[str, float]:
    """A request's clock reads in the order the server takes them, each part lasting the given milliseconds."""
    names = [parts[0][1], *(end for _, _, end in parts)]
    clock, now = {}, start
    for name, step in zip(names, [0.0, *steps_ms], strict=True):
        now += step / 1000
        clock[name] = now
    return clock


def test_each_part_is_the_median_time_between_its_two_clock_reads(capsys: pytest.CaptureFixture[str]) -> None:
    steps = [0.1, 0.2, 0.3, 0.1, 0.05, 5.0, 0.1, 0.2, 0.05, 0.05, 0.05]
    slower = [2 * step for step in steps]
    records = [
        ("/query/search", _clock(10.0, steps)),
        ("/query/search", _clock(20.0, slower)),
        ("/query/search", _clock(30.0, steps)),
        ("/whoami", _clock(40.0, [0.1] * len(steps))),
    ]
    client_ms = {"/query/search": [7.0, 20.0, 7.2], "/whoami": [2.0]}

    report(client_ms, records)

    printed = capsys.readouterr().out
    search, whoami = printed.split("/whoami:")
    assert "/query/search: 3 requests" in search
    assert "| authentication and throttle | 0.300 |" in search
    assert "| the service call (search(); whoami: its handle) | 5.000 |" in search
    assert "| **in the server** | **6.200** |" in search
    assert "| outside it (client, loopback, uvicorn's parsing) | 1.000 |" in search  # 7.2 - 6.2
    assert "| **the client's round trip** | **7.200** |" in search
    assert "1 requests" in whoami and "| **in the server** | **1.100** |" in whoami


def test_calls_the_fast_lane_answered_are_split_at_the_lanes_clock_reads(capsys: pytest.CaptureFixture[str]) -> None:
    steps = [0.2, 0.1, 0.25, 0.4, 0.05, 6.0, 0.3, 0.1, 0.1, 0.15, 0.1]
    records = [("/query/search", _clock(10.0, steps, LANE_PARTS)), ("/query/search", _clock(20.0, steps, LANE_PARTS))]

    report({"/query/search": [9.0, 9.0], "/whoami": [2.0]}, [*records, ("/whoami", _clock(40.0, [0.1] * 11))])

    search = capsys.readouterr().out.split("/whoami:")[0]
    assert "/query/search: 2 requests, 2 answered by the fast lane" in search
    assert "| the body parsed and validated | 0.250 |" in search
    assert "| authentication and throttle | 0.400 |" in search
    assert "| the service call (search()) | 6.000 |" in search
    assert "DRF set-up" not in search  # the Django path's parts are not read for the lane's calls


def test_a_compared_server_gets_another_redis_database_and_the_rest_of_the_url_as_it_was() -> None:
    assert redis_database("unix:///data/redis.sock", 2) == "unix:///data/redis.sock?db=2"
    assert redis_database("unix:///data/redis.sock?db=0&timeout=3", 1) == "unix:///data/redis.sock?timeout=3&db=1"
    assert redis_database("redis://:secret@cache:6379/0", 2) == "redis://:secret@cache:6379/2"
    assert redis_database("redis://cache:6379", 1) == "redis://cache:6379/1"
    assert redis_database("rediss://cache:6380/3?ssl_cert_reqs=none", 2) == "rediss://cache:6380/2?ssl_cert_reqs=none"

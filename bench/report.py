"""Headline figures: each benchmark prints its own tables, and one `bench-result` line per figure that a goal
names, so `make bench` (bench/all.py) can gather every script's headlines into one table."""

from __future__ import annotations

import json
import statistics
from typing import Any

PREFIX = "bench-result "


def percentile(values: list[float], cut: int) -> float:
    """The `cut`th percentile (1-99) of `values`, interpolated between the samples either side (a single value: it)."""
    return statistics.quantiles(values, n=100, method="inclusive")[cut - 1] if len(values) > 1 else values[0]


def headline(metric: str, value: float, unit: str, goal: str = "") -> None:
    """Print one headline figure, e.g. headline("POST /whoami p50 over HTTP", 2.1, "ms", "<= 5")."""
    print(PREFIX + json.dumps({"metric": metric, "value": round(value, 2), "unit": unit, "goal": goal}), flush=True)


def headlines(output: str) -> list[dict[str, Any]]:
    """The headline figures printed in a script's output, in order."""
    return [json.loads(line[len(PREFIX) :]) for line in output.splitlines() if line.startswith(PREFIX)]

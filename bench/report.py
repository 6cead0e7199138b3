"""Headline figures: each benchmark prints its own tables, and one `bench-result` line per figure that a goal
names, so `make bench` (bench/all.py) can gather every script's headlines into one table."""

from __future__ import annotations

import json
from typing import Any

PREFIX = "bench-result "


def headline(metric: str, value: float, unit: str, goal: str = "") -> None:
    """Print one headline figure, e.g. headline("POST /whoami p50 over HTTP", 2.1, "ms", "<= 5")."""
    print(PREFIX + json.dumps({"metric": metric, "value": round(value, 2), "unit": unit, "goal": goal}), flush=True)


def headlines(output: str) -> list[dict[str, Any]]:
    """The headline figures printed in a script's output, in order."""
    return [json.loads(line[len(PREFIX) :]) for line in output.splitlines() if line.startswith(PREFIX)]

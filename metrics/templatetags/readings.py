"""How readings read on the metric pages: a number with at most two decimals, no trailing zeros, thousands
grouped (82.4, 12,345); a few values as the points of a small sparkline."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def amount(value: float | None) -> str:
    if value is None:
        return ""
    return f"{round(float(value), 2):,.2f}".rstrip("0").rstrip(".")


SPARK_WIDTH, SPARK_HEIGHT, SPARK_PAD = 120, 32, 3


@register.filter
def sparkline(values: list[float]) -> str:
    """SVG polyline points for `values` in a SPARK_WIDTH by SPARK_HEIGHT box, lowest at the bottom."""
    if len(values) < 2:
        return ""
    low, high = min(values), max(values)
    spread = (high - low) or 1.0
    step = (SPARK_WIDTH - 2 * SPARK_PAD) / (len(values) - 1)
    usable = SPARK_HEIGHT - 2 * SPARK_PAD
    return " ".join(
        f"{SPARK_PAD + i * step:.1f},{SPARK_PAD + usable - (value - low) / spread * usable:.1f}"
        for i, value in enumerate(values)
    )

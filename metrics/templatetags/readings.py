"""How a reading's number reads: at most two decimals, no trailing zeros, thousands grouped (82.4, 12,345)."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def amount(value: float | None) -> str:
    if value is None:
        return ""
    return f"{round(float(value), 2):,.2f}".rstrip("0").rstrip(".")

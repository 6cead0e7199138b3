"""The calendar range the service accepts, and day arithmetic that cannot overflow it.

Times outside FIRST_YEAR..LAST_YEAR are typos or probes: refused at the door (`plausible_time`, shared by every
endpoint that takes a time), so a day, its end in any time zone and a digest's horizon always exist. Stored
rows from before that check, and arithmetic on them, still go through `days_after`, which clamps instead of
raising OverflowError.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

FIRST_YEAR, LAST_YEAR = 1900, 2999


def is_plausible(value: date | datetime) -> bool:
    return FIRST_YEAR <= value.year <= LAST_YEAR


def days_after(day: date, days: int) -> date:
    """`day + days`, held at the ends of the calendar instead of overflowing."""
    try:
        return day + timedelta(days=days)
    except OverflowError:
        return date.max if days > 0 else date.min


def moment_after(moment: datetime, delta: timedelta) -> datetime | None:
    """`moment + delta`, or None where that moment does not exist (past year 9999 or before year 1)."""
    try:
        return moment + delta
    except OverflowError:
        return None

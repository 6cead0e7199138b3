"""The time a question asks about, read from its words ("on 13 October 2023", "in May", "last year").

Pure functions. Dates are read in English, the way people write them in a question:
- a day: "13 October 2023", "October 13, 2023", "2023-10-13" (widened by the largest time zone offsets, since
  times are stored in UTC);
- a month: "May 2023", "in May" (a month name alone must be capitalised and follow "in", "during", "of",
  "since" or "until", so "may" the verb is never a month): the latest such month that has begun by the
  reference time;
- a year: "in 2023", "during 2023";
- a span back from the reference time: "today", "yesterday", "this/last week", "this/last month",
  "this/last year".

The reference time is the newest memory in reach, not the wall clock, so an imported archive is asked about in
its own timeline (memory.recall.anchors). The most precise date named wins; a question naming none has no
window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

_MONTH_NAMES = (
    "january jan|february feb|march mar|april apr|may|june jun|july jul|august aug|september sep sept"
    "|october oct|november nov|december dec"
)
MONTHS = {name: number for number, names in enumerate(_MONTH_NAMES.split("|"), start=1) for name in names.split()}
# A month named alone ("in May") must be written out; "in Jan" may be a person.
_FULL_NAMES = {names.split()[0] for names in _MONTH_NAMES.split("|")}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso", re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)\b")),
    ("day month year", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("month day year", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("month year", re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("month", re.compile(r"\b(?:in|during|of|since|until)\s+(?:early\s+|late\s+|mid-?)?([A-Z][a-z]+)\b")),
    ("year", re.compile(rf"\b(?:in|during|since|until)\s+{_YEAR}\b", re.IGNORECASE)),
    ("span", re.compile(r"\b(today|yesterday|(?:this|last|past)\s+(?:week|month|year))\b", re.IGNORECASE)),
]


DAY_SLACK = timedelta(hours=14)


@dataclass(frozen=True)
class Window:
    """[start, end): the time a question asks about."""

    start: datetime
    end: datetime
    said: str  # the words it was read from

    def holds(self, moment: datetime | None) -> bool:
        return moment is not None and self.start <= moment < self.end


def _day(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime.combine(date(year, month, day), time(), tzinfo=UTC)
    except ValueError:
        return None


def _month(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    return start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)


def _span(words: str, reference: datetime) -> tuple[datetime, datetime]:
    today = datetime.combine(reference.date(), time(), tzinfo=UTC)
    which, _, unit = words.lower().partition(" ")
    unit = unit.strip()
    if which == "today":
        return today, today + timedelta(days=1)
    if which == "yesterday":
        return today - timedelta(days=1), today
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        return (monday, monday + timedelta(days=7)) if which == "this" else (monday - timedelta(days=7), monday)
    if unit == "month":
        this = _month(today.year, today.month)
        if which == "this":
            return this
        before = this[0] - timedelta(days=1)
        return _month(before.year, before.month)
    year = today.year if which == "this" else today.year - 1
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)


def asked_window(question: str, reference: datetime) -> Window | None:
    """The window of the most precise date the question names (a day before a month before a year before a
    span), read against `reference` (aware)."""
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(question):
            window = _window(kind, match, reference.astimezone(UTC))
            if window is not None:
                return window
    return None


def _window(kind: str, match: re.Match[str], reference: datetime) -> Window | None:
    said = match.group(0)
    if kind == "span":
        return Window(*_span(match[1], reference), said)
    if kind == "year":
        year = int(match[1])
        return Window(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), said)
    if kind == "month":
        if match[1].lower() not in _FULL_NAMES:
            return None
        month = MONTHS[match[1].lower()]
        year = reference.year if month <= reference.month else reference.year - 1
        return Window(*_month(year, month), said)
    if kind == "month year":
        return Window(*_month(int(match[2]), MONTHS[match[1].lower()]), said)
    if kind == "iso":
        year, month, day = int(match[1]), int(match[2]), int(match[3])
    elif kind == "day month year":
        year, month, day = int(match[3]), MONTHS[match[2].lower()], int(match[1])
    else:
        year, month, day = int(match[3]), MONTHS[match[1].lower()], int(match[2])
    start = _day(year, month, day) if 1 <= month <= 12 else None
    # The day as the person lived it, in any time zone: times are stored in UTC.
    return Window(start - DAY_SLACK, start + timedelta(days=1) + DAY_SLACK, said) if start else None

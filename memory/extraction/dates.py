"""Deadlines in English and Dutch, resolved against the moment a message was written (seeds/000 rules).

Set a deadline: "by Friday", "before 3 May", "on 2026-05-01", "tomorrow"; Dutch "uiterlijk vrijdag",
"vóór vrijdag", "deadline voor vrijdag". Bare Dutch "voor" / "tegen" set nothing. Removal wording ("There is
no deadline now", "Er is geen deadline meer") clears an inferred deadline.
"""

from __future__ import annotations

import re
from datetime import date

from memory.moments import days_after

WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6,
    "maandag": 0, "dinsdag": 1, "woensdag": 2, "donderdag": 3, "vrijdag": 4, "zaterdag": 5, "zondag": 6,
}  # fmt: skip
MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3, "apr": 4,
    "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
    "januari": 1, "februari": 2, "maart": 3, "mei": 5, "juni": 6, "juli": 7, "augustus": 8, "oktober": 10,
}  # fmt: skip
RELATIVE = {"today": 0, "vandaag": 0, "tonight": 0, "tomorrow": 1, "morgen": 1, "overmorgen": 2}

_DAY = (
    r"(?P<day>\d{4}-\d{2}-\d{2}|today|tonight|tomorrow|vandaag|morgen|overmorgen|"
    r"(?:next\s+|volgende\s+)?(?:" + "|".join(WEEKDAYS) + r")|"
    r"\d{1,2}\s+(?:" + "|".join(MONTHS) + r")|(?:" + "|".join(MONTHS) + r")\s+\d{1,2}(?:st|nd|rd|th)?|"
    r"end of (?:the )?week)"
)
# Explicit deadline words only: Dutch needs "uiterlijk", "vóór" (with the accent) or "deadline voor".
DEADLINE = re.compile(
    r"\b(?:by|before|no later than|due(?: on)?|on|until|uiterlijk(?: op)?|deadline voor)\s+" + _DAY
    + r"|(?<![\w])vóór\s+" + _DAY.replace("?P<day>", "?P<day2>"),
    re.IGNORECASE,
)  # fmt: skip
REMOVAL = re.compile(
    r"\b(?:there(?: is|'s) no (?:deadline|due date)(?: now| anymore| any more)?|no (?:deadline|due date) any ?more|"
    r"er is geen deadline(?: meer)?|geen deadline meer)\b",
    re.IGNORECASE,
)


def find_deadline(text: str) -> tuple[re.Match[str] | None, bool]:
    """The deadline phrase in `text` (or None), and whether the text removes a deadline."""
    return DEADLINE.search(text), bool(REMOVAL.search(text))


def resolve_day(phrase: str, today: date) -> date | None:
    """The date a day phrase means, said on `today`; None when it cannot be told."""
    phrase = " ".join(phrase.lower().split())
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", phrase):
        try:
            return date.fromisoformat(phrase)
        except ValueError:
            return None
    if phrase in RELATIVE:
        return days_after(today, RELATIVE[phrase])
    if phrase.startswith(("end of", "end of the")):
        return days_after(today, (4 - today.weekday()) % 7)
    words = phrase.split()
    if words[-1] in WEEKDAYS:
        # The next such day after today ("by Friday" said on a Friday means a week later).
        ahead = (WEEKDAYS[words[-1]] - today.weekday()) % 7 or 7
        return days_after(today, ahead)
    match = re.fullmatch(r"(\d{1,2}) (\w+)|(\w+) (\d{1,2})(?:st|nd|rd|th)?", phrase)
    if match:
        day_text, month_text = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
        month = MONTHS.get(month_text)
        if month is None:
            return None
        try:
            candidate = date(today.year, month, int(day_text))
            return candidate if candidate >= today else date(today.year + 1, month, int(day_text))
        except ValueError:  # no such day, or the next one falls past the calendar's end
            return None
    return None


def deadline_day(match: re.Match[str]) -> str:
    return match.group("day") or match.group("day2")

"""Day phrases in English and Dutch, resolved against the moment a message was written (seeds/000 rules).

A weekday ("Friday", "by Friday", "this Friday", Dutch "vrijdag", "uiterlijk vrijdag") is the first such day
after today; "next Friday" is that too unless it still falls in the current week, then a week later. "volgende
week dinsdag" / "next week Tuesday" is the Tuesday of the next Monday-to-Sunday week. "end of the month",
"end of November", "eind november" are the last day of that month; "in two weeks", "over twee weken" count
days; explicit dates ("4 December", "December 4th", "2026-05-01") are that day. Bare Dutch "voor" / "tegen"
before a day set nothing (they also mean "for" / "against"). Removal wording ("There is no deadline now",
"Er is geen deadline meer") clears an inferred deadline.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
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
RELATIVE = {"today": 0, "vandaag": 0, "tonight": 0, "vanavond": 0, "tomorrow": 1, "morgen": 1, "overmorgen": 2}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10,
    "een": 1, "één": 1, "twee": 2, "drie": 3, "vier": 4, "vijf": 5, "zes": 6, "tien": 10,
}  # fmt: skip

_WEEKDAY = "(?:" + "|".join(WEEKDAYS) + ")"
_MONTH = "(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + ")"
_COUNT = r"(?:\d{1,3}|" + "|".join(NUMBERS) + ")"
DAY = (
    r"\d{4}-\d{2}-\d{2}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b(?:\s+\d{{4}})?"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?"
    rf"|(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?month|(?:the\s+)?end\s+of\s+{_MONTH}"
    rf"|eind(?:e)?\s+(?:van\s+)?(?:de\s+maand|deze\s+maand|{_MONTH})"
    rf"|(?:in|over|within|binnen)\s+{_COUNT}\s+(?:weeks?|days?|weken|dagen|dag)"
    rf"|(?:volgende|next)\s+week\s+{_WEEKDAY}"
    rf"|(?:(?:this|next|coming|deze|volgende|aanstaande|komende)\s+)?{_WEEKDAY}"
    r"|today|tonight|tomorrow|vandaag|vanavond|overmorgen|morgen"
    r"|end\s+of\s+(?:the\s+)?week"
)
# Deadline words before a day phrase belong to it (cut from a label with it). Dutch "vóór" needs its accent:
# bare "voor" / "tegen" also mean "for" / "against", so a day after them sets nothing.
_LEAD = (
    r"(?:(?:by|before|no later than|due(?:\s+on)?|on|until|till|uiterlijk(?:\s+op)?|deadline\s+voor|vóór|op|"
    r"ergens)\s+)?"
)
DAY_PHRASE = re.compile(rf"(?<![\w-])(?P<lead>{_LEAD})(?P<day>{DAY})(?![\w-])", re.IGNORECASE)
_BARE_DUTCH = re.compile(r"\b(?:voor|tegen)\s+$", re.IGNORECASE)
REMOVAL = re.compile(
    r"\b(?:there(?: is|'s) no (?:deadline|due date)(?: now| anymore| any more)?|no (?:deadline|due date) any ?more|"
    r"er is geen deadline(?: meer)?|geen deadline meer)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DayPhrase:
    start: int
    end: int
    day: date | None


def find_day(text: str, today: date) -> DayPhrase | None:
    """The first day phrase in `text` that sets a day (with its deadline word), or None."""
    for match in DAY_PHRASE.finditer(text):
        if not match["lead"] and _BARE_DUTCH.search(text[: match.start()]):
            continue
        return DayPhrase(match.start(), match.end(), resolve_day(match["day"], today))
    return None


def removes_deadline(text: str) -> bool:
    return bool(REMOVAL.search(text))


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def resolve_day(phrase: str, today: date) -> date | None:
    """The date a day phrase means, said on `today`; None when it cannot be told."""
    phrase = " ".join(phrase.lower().split())
    try:
        return _resolve(phrase, today)
    except (ValueError, OverflowError):  # no such day, or past the calendar's end
        return None


def _resolve(phrase: str, today: date) -> date | None:
    words = phrase.replace(",", "").split()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", phrase):
        return date.fromisoformat(phrase)
    if phrase in RELATIVE:
        return days_after(today, RELATIVE[phrase])
    if re.fullmatch(r"end of (the )?week", phrase):
        return days_after(today, (4 - today.weekday()) % 7)
    if "month" in words or "maand" in words:
        return _month_end(today.year, today.month)
    if words[0] in ("end", "the", "eind", "einde"):
        month = MONTHS[words[-1]]
        return _month_end(today.year if month >= today.month else today.year + 1, month)
    if words[0] in ("in", "over", "within", "binnen"):
        count = int(words[1]) if words[1].isdigit() else NUMBERS[words[1]]
        return days_after(today, count * (7 if words[2].startswith("we") else 1))
    if words[-1] in WEEKDAYS:
        target = WEEKDAYS[words[-1]]
        if len(words) == 3:  # "volgende week dinsdag": that day of the next Monday-to-Sunday week
            return days_after(today, 7 - today.weekday() + target)
        ahead = (target - today.weekday()) % 7 or 7  # "by Friday" said on a Friday means a week later
        if words[0] == "next" and today.weekday() + ahead <= 6:
            ahead += 7  # "next Friday" said on a Monday: not this week's Friday
        return days_after(today, ahead)
    numbers = [word for word in words if word[:1].isdigit()]
    months = [MONTHS[word] for word in words if word in MONTHS]
    if not months or not numbers:
        return None
    day = int(re.sub(r"\D", "", numbers[0]))
    if len(numbers) > 1:
        return date(int(numbers[1]), months[0], day)
    candidate = date(today.year, months[0], day)
    return candidate if candidate >= today else date(today.year + 1, months[0], day)

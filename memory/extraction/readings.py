"""Numeric readings in the owner's own words ("weighed 78.2 kg", "ran 5 km in 28 minutes", "slept 7.5 hours"),
in English and Dutch, as values in each metric's canonical unit.

A reading belongs to the owner only when nobody else is its subject: "my son weighs 30 kg" is not the owner's
weight. "Yesterday" / "gisteren" moves the reading one day back from the message time.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memory.extraction.base import EvidenceRef, ReadingCandidate
from memory.moments import moment_after

_N = r"(?P<value>\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:[.,]\d+)?)"
_ABOUT = (
    r"(?:(?:this\s+morning|today|yesterday|in\s+at|vanochtend|vanmorgen|vandaag|gisteren)\s+)?"
    r"(?:about\s+|around\s+|roughly\s+|almost\s+|ongeveer\s+|bijna\s+|zo'n\s+)?"
)
# unit word -> (canonical unit, factor to it)
UNITS = {
    "kg": ("kg", 1.0), "kilo": ("kg", 1.0), "kilos": ("kg", 1.0), "kilogram": ("kg", 1.0),
    "kilograms": ("kg", 1.0), "lb": ("kg", 0.45359237), "lbs": ("kg", 0.45359237),
    "pound": ("kg", 0.45359237), "pounds": ("kg", 0.45359237),
    "km": ("km", 1.0), "kilometer": ("km", 1.0), "kilometers": ("km", 1.0), "kilometre": ("km", 1.0),
    "kilometres": ("km", 1.0), "mi": ("km", 1.609344), "mile": ("km", 1.609344), "miles": ("km", 1.609344),
    "m": ("km", 0.001), "meter": ("km", 0.001), "meters": ("km", 0.001), "metres": ("km", 0.001),
    "hours": ("h", 1.0), "hour": ("h", 1.0), "hrs": ("h", 1.0), "hr": ("h", 1.0), "h": ("h", 1.0),
    "uur": ("h", 1.0),
    "minutes": ("min", 1.0), "minute": ("min", 1.0), "min": ("min", 1.0), "mins": ("min", 1.0),
    "minuten": ("min", 1.0),
    "bpm": ("bpm", 1.0), "steps": ("steps", 1.0), "stappen": ("steps", 1.0),
}  # fmt: skip
_MASS = r"(?P<unit>kg|kilos?|kilograms?|lbs?|pounds?)"
_DISTANCE = r"(?P<unit>km|kilomet(?:er|re)s?|miles?|mi|m|meters?|metres)"
_HOURS = r"(?P<unit>hours?|hrs?|h|uur)"
_I = re.IGNORECASE

# (pattern, metric slug): the first pattern that matches a stretch of text claims it.
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b(?:weigh(?:ed|s)?|weight(?:\s+(?:is|was|of|today|this morning))?:?|woog|weeg|gewicht"
                rf"(?:\s+(?:is|was))?:?)\s+{_ABOUT}{_N}\s*{_MASS}\b", _I), "body_weight"),
    (re.compile(rf"\b(?:ran|run|jogged|liep|gelopen|hardgelopen)\s+{_ABOUT}{_N}\s*{_DISTANCE}\b", _I),
     "running_distance"),
    (re.compile(rf"\b(?:cycled|biked|rode|fietste|gefietst)\s+{_ABOUT}{_N}\s*{_DISTANCE}\b", _I), "cycling_distance"),
    (re.compile(rf"\b(?:swam|zwom|gezwommen)\s+{_ABOUT}{_N}\s*{_DISTANCE}\b", _I), "swimming_distance"),
    (re.compile(rf"\b(?:walked|wandelde|gewandeld)\s+{_ABOUT}{_N}\s*{_DISTANCE}\b", _I), "walking_distance"),
    (re.compile(rf"\b{_N}\s*(?P<unit>steps|stappen)\b", _I), "steps"),
    (re.compile(rf"\b(?:slept|sleep|sliep|geslapen)\s+(?:for\s+)?{_ABOUT}{_N}\s*{_HOURS}\b", _I), "sleep_duration"),
    (re.compile(rf"\b{_N}\s*{_HOURS}\s+(?:of\s+)?(?:sleep|slaap)\b", _I), "sleep_duration"),
    (re.compile(rf"\bresting\s+(?:heart\s*rate|hr|pulse)\s+(?:is\s+|was\s+|of\s+)?{_ABOUT}{_N}\s*(?P<unit>bpm)?",
                _I), "resting_heart_rate"),
    (re.compile(rf"\b(?:heart\s*rate|hartslag|pulse)\s+(?:is\s+|was\s+|of\s+|van\s+)?{_ABOUT}{_N}\s*(?P<unit>bpm)\b",
                _I), "heart_rate"),
]  # fmt: skip
# A run's duration: "ran 5 km in 28 minutes".
RUN_TIME = re.compile(rf"\s+in\s+{_ABOUT}{_N}\s*(?P<unit>minutes?|mins?|minuten)\b", _I)
DISTANCE_METRICS = {"running_distance", "cycling_distance", "swimming_distance", "walking_distance"}
SOMEONE_ELSE = re.compile(
    r"(?i:\b(?:he|she|they|his|her|their|hij|zij|ze|haar|zijn|my\s+(?!own\b)\w+|mijn\s+\w+)\b)"
    r"|\b[A-Z][a-z]+\s+(?:weighs|weighed|ran|slept|walked|cycled|swam)\b"
)
MY_OWN = re.compile(r"\bmy\s+(?:weight|heart\s*rate|resting|pulse|sleep|run|steps)\b|\bmijn\s+(?:gewicht|hartslag)\b",
                    _I)  # fmt: skip
YESTERDAY = re.compile(r"\b(?:yesterday|last night|gisteren|gisteravond|vannacht)\b", _I)
DEFAULT_UNIT = {"steps": "steps", "resting_heart_rate": "bpm", "heart_rate": "bpm"}


def number(text: str) -> float:
    """`78.2`, Dutch `78,2`, and thousands `10,000` (a comma before exactly three digits)."""
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", text):
        return float(text.replace(",", ""))
    return float(text.replace(",", "."))


def canonical(value: float, unit: str) -> tuple[float, str]:
    """A value in its metric's canonical unit (kg, km, h, min, bpm, steps); unknown units stay as given."""
    canonical_unit, factor = UNITS.get(unit.lower(), (unit.lower(), 1.0))
    return round(value * factor, 3), canonical_unit


def _owned_by_someone_else(prefix: str) -> bool:
    return bool(SOMEONE_ELSE.search(prefix)) and not MY_OWN.search(prefix)


def find_readings(sentence: str, evidence: EvidenceRef, said_at: datetime | None) -> list[ReadingCandidate]:
    occurred = moment_after(said_at, -timedelta(days=1)) if said_at and YESTERDAY.search(sentence) else said_at
    found: list[ReadingCandidate] = []
    taken: list[tuple[int, int]] = []
    for pattern, metric in PATTERNS:
        for match in pattern.finditer(sentence):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            if _owned_by_someone_else(sentence[: match.start()] + " " + match.group(0)):
                continue
            unit = match.groupdict().get("unit") or DEFAULT_UNIT.get(metric, "")
            value, unit = canonical(number(match["value"]), unit)
            if value <= 0:
                continue
            taken.append(match.span())
            found.append(ReadingCandidate(metric, value, unit, evidence, occurred))
            if metric in DISTANCE_METRICS and (timed := RUN_TIME.match(sentence, match.end())):
                minutes, _ = canonical(number(timed["value"]), timed["unit"])
                duration_metric = metric.replace("_distance", "_duration")
                found.append(ReadingCandidate(duration_metric, minutes, "min", evidence, occurred))
    return found

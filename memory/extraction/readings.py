"""Numeric readings in the owner's own words ("weighed 78.2 kg", "ran 5 km in 28 minutes", "7u geslapen"),
in English and Dutch, as values in each metric's canonical unit.

A rule pairs a cue ("weighed", "scale", "I'm at", "gefietst") with a measure (a number and a unit) a few words
before or after it, so word order does not matter ("Ran 10 km", "10 km gelopen", "Weighed myself this
morning: 82.4 kg"). A match is then judged within its clause: it is not the owner's reading when somebody else
is the subject ("my son weighs 30 kg", "Lotte ran 10 km"), when it is a goal, plan, hypothesis or question
("I want to get to 75 kg", "if I weighed 90 kg"), a change ("lost 2 kg", "down two pounds"), or a habit
("10,000 steps a day"). Time words set when it was observed: "yesterday" / "gisteren" one day back, a weekday
its latest occurrence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory.extraction.base import EvidenceRef, ReadingCandidate
from memory.moments import moment_after

_I = re.IGNORECASE
# unit word -> (canonical unit, factor to it)
UNITS = {
    "kg": ("kg", 1.0), "kilo": ("kg", 1.0), "kilos": ("kg", 1.0), "kilogram": ("kg", 1.0),
    "kilograms": ("kg", 1.0), "lb": ("kg", 0.45359237), "lbs": ("kg", 0.45359237),
    "pound": ("kg", 0.45359237), "pounds": ("kg", 0.45359237),
    "km": ("km", 1.0), "k": ("km", 1.0), "kilometer": ("km", 1.0), "kilometers": ("km", 1.0),
    "kilometre": ("km", 1.0), "kilometres": ("km", 1.0), "mi": ("km", 1.609344), "mile": ("km", 1.609344),
    "miles": ("km", 1.609344), "m": ("km", 0.001), "meter": ("km", 0.001), "meters": ("km", 0.001),
    "metre": ("km", 0.001), "metres": ("km", 0.001),
    "hours": ("h", 1.0), "hour": ("h", 1.0), "hrs": ("h", 1.0), "hr": ("h", 1.0), "h": ("h", 1.0),
    "uur": ("h", 1.0), "u": ("h", 1.0),
    "minutes": ("min", 1.0), "minute": ("min", 1.0), "min": ("min", 1.0), "mins": ("min", 1.0),
    "minuten": ("min", 1.0), "minuut": ("min", 1.0),
    "bpm": ("bpm", 1.0), "steps": ("steps", 1.0), "stappen": ("steps", 1.0),
}  # fmt: skip
# Small numbers written out ("slept six hours", "zes uur geslapen"). Dutch "een" is left out: it is also "a".
_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "twee": 2, "drie": 3, "vier": 4, "vijf": 5, "zes": 6, "zeven": 7, "acht": 8, "negen": 9, "tien": 10,
    "elf": 11, "twaalf": 12, "twintig": 20, "dertig": 30, "veertig": 40, "vijftig": 50, "anderhalf": 1.5,
}  # fmt: skip
_VAL = (
    r"(?<![\w.,])(?P<value>\d{1,3}(?:[,.]\d{3})+(?![\d,.]*\d)|\d+(?:[.,]\d+)?|" + "|".join(_WORDS) + r")"
    r"(?P<half>\s+and\s+a\s+half|\s+en\s+een\s+half|½)?"
)
_SEP = r"[\s-]*"
_OTHER_UNITS = "|".join(sorted(UNITS, key=len, reverse=True)) + (
    r"|st|stone|percent|procent|years?|jaar|jr|cm|mm|times|keer|points?|punten|k?cal|calories|days?|dagen|"
    r"weeks?|weken|months?|maanden|of|van"
)
# The measures a rule can ask for; each names its unit group `unit`.
_TIME_UNIT = r"(?P<unit>hours?|hrs?|h|uur|u|minutes?|mins?|min|minuten|minuut)\b"
# "7h30", "1 hour 5 minutes", "24 minutes and 30 seconds"
_TIME_REST = (
    r"(?:(?P<mins>\d{2})\b|\s*(?:and\s+|en\s+)?(?P<mins2>\d{1,2})\s*(?:minutes?|mins?|min|m|minuten)\b"
    r"|\s*(?:and\s+|en\s+)?(?P<secs>\d{1,2})\s*(?:seconds?|secs?|s|seconden)\b)?"
)
_HOURS = rf"{_VAL}{_SEP}(?P<unit>hours?|hrs?|h|uur|u)(?:\b|(?=\d)){_TIME_REST}"
MEASURES = {
    "mass": rf"{_VAL}{_SEP}(?P<unit>kg|kilos?|kilograms?|lbs?|pounds?)\b",
    "distance": rf"{_VAL}{_SEP}(?P<unit>km|k|kilomet(?:er|re)s?|miles?|mi|m|met(?:er|re)s?)\b",
    "k": rf"{_VAL}(?P<unit>k)\b",
    # a number with no unit at all, and nothing that makes it a count or a time
    "bare": rf"{_VAL}(?![\w.,:]*\d)(?!{_SEP}(?:%|x\b|(?:{_OTHER_UNITS})\b))",
    "race": r"(?P<race>half[\s-]marathon|halve\s+marathon|marathon)\b",
    "hours": _HOURS,
    "duration": rf"(?:(?P<clock>\d{{1,2}}:\d{{2}}(?::\d{{2}})?)\b|{_VAL}{_SEP}{_TIME_UNIT}{_TIME_REST})",
    "count": rf"{_VAL}(?P<k>k)?{_SEP}(?P<unit>steps|stappen)\b",
    "bpm": rf"{_VAL}(?:{_SEP}(?P<unit>bpm|beats|slagen))?(?![\w.,:]*\d)",
}
# How far a cue may be from its number, in characters without digits or sentence ends.
_GAP = r"(?P<gap>[^\d.!?;]{0,%d}?)"
# Behind a distance, the gap may hold its time: "10 km in 52 minuten gelopen".
_TIMED_GAP = (
    r"(?P<gap>(?:[^\d.!?;]|\d{1,2}:\d{2}(?::\d{2})?|\d+(?:[.,]\d+)?\s*(?:minuten|minuut|minutes?|mins?|uur|"
    r"hours?|u)\b){0,%d}?)"
)
_NEAR = r"(?P<gap>(?:\s+|\s*:\s*)(?:(?:now|currently|still|finally|officially|already|back|down|up|to|at|nu|"
_NEAR += r"inmiddels|al|eindelijk|weer|officieel|terug|op|naar|about|around|roughly|ongeveer|zo'n|rond)\s+)*)"
_RUN = r"ran|run|running|jog|jogged|jogging|liep|rende|gerend|gelopen|hardgelopen|hardlopen|gejogd|loopje"
_RIDE = r"cycled|biked|bike\s+ride|rode|ride|cycling|fietste|gefietst|fietsen|fietstocht|fietsrit"
_SWIM = r"swam|swim|swimming|zwom|gezwommen|zwemmen"
_WALK = r"walked|walk|walking|hiked|hike|wandelde|gewandeld|wandeling|wandelen"


@dataclass(frozen=True)
class Rule:
    metric: str
    measure: str
    before: str = ""  # a cue ahead of the number
    after: str = ""  # a cue behind it
    gap: int = 40
    gap_after: int = 0  # when the cue behind needs another gap than the one ahead
    near: bool = False  # the cue must be right next to the number ("I'm at 79 kg"), adverbs apart


_RULES = [
    Rule("body_weight", "mass", before=r"weigh(?:ed|ing|s)?|weigh-in|weight|scales?|woog|weeg|gewogen|gewicht"
         r"|weegschaal"),
    Rule("body_weight", "mass", before=r"i'?m|i\s+am|i\s+was|ik\s+ben|ik\s+zit|ik\s+was|zit\s+ik|ben\s+ik"
         r"|down\s+to|up\s+to|back\s+(?:down\s+|up\s+)?to|(?:dropped|fell|got)\s+(?:down\s+)?to|terug\s+naar"
         r"|gezakt\s+naar", near=True),
    Rule("body_weight", "mass", after=r"on\s+the\s+scales?|op\s+de\s+weegschaal|gewogen", gap=12),
    Rule("body_weight", "bare", before=r"weigh(?:ed|s)?|weight|scales?|woog|weeg|gewogen|gewicht|weegschaal", gap=25),
    Rule("running_distance", "distance", before=_RUN, after=_RUN, gap=25),
    Rule("cycling_distance", "distance", before=_RIDE, after=_RIDE, gap=25),
    Rule("swimming_distance", "distance", before=_SWIM, after=_SWIM, gap=25),
    Rule("walking_distance", "distance", before=_WALK, after=_WALK, gap=25),
    # "did a 5k", "een 10k gelopen": a race distance in k is a run
    Rule("running_distance", "k", before=r"did|done|finished|completed|raced|a|my|een|mijn", gap=8),
    Rule("running_distance", "race", before=r"ran|run|did|done|finished|completed|raced|liep|gelopen", gap=8,
         after=r"gelopen|uitgelopen|voltooid|gefinisht|finished|done|completed", gap_after=15),
    Rule("running_duration", "duration", before=rf"(?:{_RUN})\s+for", after=_RUN, gap=12),
    Rule("cycling_duration", "duration", before=rf"(?:{_RIDE})\s+for", after=_RIDE, gap=12),
    Rule("swimming_duration", "duration", before=rf"(?:{_SWIM})\s+for", after=_SWIM, gap=12),
    Rule("walking_duration", "duration", before=rf"(?:{_WALK})\s+for", after=_WALK, gap=12),
    Rule("steps", "count"),
    Rule("sleep_duration", "hours", before=r"slept|sleep|sliep|slaap|slapen|geslapen",
         after=r"(?:of\s+)?(?:sleep|slaap)|geslapen|asleep", gap=30),
    Rule("resting_heart_rate", "bpm", before=r"resting\s+(?:heart\s*rate|hr|pulse)|rhr|rustpols|rusthartslag"
         r"|rustende\s+hartslag|hartslag\s+in\s+rust", gap=20),
    Rule("heart_rate", "bpm", before=r"heart\s*rate|hartslag|pulse|pols|hr", gap=20),
]  # fmt: skip
PLAUSIBLE = {
    "body_weight": (20, 350), "sleep_duration": (0.5, 16), "steps": (10, 200_000), "resting_heart_rate": (25, 220),
    "heart_rate": (25, 250),
}  # fmt: skip


def _compile(rule: Rule) -> list[re.Pattern[str]]:
    measure = MEASURES[rule.measure]
    if not rule.before and not rule.after:
        return [re.compile(rf"\b{measure}", _I)]
    gap = _NEAR if rule.near else _GAP % rule.gap
    patterns = [re.compile(rf"\b(?:{rule.before})(?!\w){gap}{measure}", _I)] if rule.before else []
    if rule.after:
        after_gap = (_TIMED_GAP if rule.measure == "distance" else _GAP) % (rule.gap_after or rule.gap)
        patterns.append(re.compile(rf"\b{measure}{after_gap}\b(?:{rule.after})\b", _I))
    return patterns


PATTERNS = [(pattern, rule) for rule in _RULES for pattern in _compile(rule)]
# A timed distance: "ran 10 km along the river in 54 minutes", "10 km gelopen in 52 minuten", "in 1:05:30".
RUN_TIME = re.compile(
    rf"[^\d.!?;]{{0,60}}?\b(?:in|binnen|took(?:\s+me)?|time\s+of|tijd\s+van|deed\s+(?:ik\s+)?(?:er\s+)?)\s+"
    rf"(?:about\s+|around\s+|just\s+under\s+|just\s+over\s+|ongeveer\s+|net\s+onder\s+|ruim\s+)?"
    rf"{MEASURES['duration']}",
    _I,
)
# The fastest plausible pace in minutes per km: "5 km in 1:05" is an hour and five minutes, not 65 seconds.
_FASTEST_PACE = {"running": 2.5, "cycling": 0.8, "swimming": 10.0, "walking": 5.0}

_RELATIVE = (
    r"son|daughter|wife|husband|partner|mom|mum|mother|dad|father|brother|sister|kids?|child|children|baby|"
    r"friend|colleague|boss|manager|dog|cat|girlfriend|boyfriend|grandma|grandpa|grandmother|grandfather|"
    r"zoon|dochter|vrouw|man|moeder|mama|vader|papa|broer|zus|kind|kinderen|vriend|vriendin|collega|baas|"
    r"hond|kat|oma|opa"
)
_NOT_NAMES = (
    r"(?!(?:Today|Yesterday|This|That|It|There|Then|Also|Finally|Just|Only|Barely|Actually|Really|Still|"
    r"Already|Again|Never|Maar|Pas|Net|Nog|Weer|Al|Weight|Sleep|Steps|And|But|So|Now|"
    r"Ik|We|Wij|Me|My|Mijn|Our|Onze|Vandaag|Gisteren|Vanochtend|Vannacht|Dit|Dat|Het|Er|Toen|Ook|Eindelijk|Nu|En|Maar)\b)"
)
_VERBS = r"weighs|weighed|ran|runs|slept|sleeps|walked|cycled|swam|is|was|has|had|did|weegt|woog|liep|rende|"
_VERBS += r"fietste|zwom|sliep|heeft|loopt|says|said|told|tells|zegt|zei|vertelde|meldde"
SOMEONE_ELSE = re.compile(
    rf"(?i:\b(?:he|she|they|his|her|their|hij|zij|haar|zijn(?!\s+(?:we|wij)\b)|(?:my|our|mijn|onze|ons)\s+"
    rf"(?:\w+\s+)?(?:{_RELATIVE}))\b)"
    rf"|\b{_NOT_NAMES}[A-Z][a-z]+\s+(?:{_VERBS})\b"
    rf"|\b(?i:woog|liep|rende|fietste|zwom|sliep|heeft|weegt)\s+(?:{_NOT_NAMES}(?!Ik\b)[A-Z][a-z]+|(?i:ze))\b"
    rf"|\b(?i:ze)\s+(?i:{_VERBS})\b|\b(?i:dat|that)\s+(?i:ze)\b"
    rf"|(?i:\b(?:the|a|an|de|het|een|this|that|dit|dat|deze)\s+\w+\s+(?:weighs|weighed|weegt|woog)\b)"
)
# Goals, plans, hypotheses and habits are not observations.
NOT_OBSERVED = re.compile(
    r"(?i:\b(?:want|wants|wanted|wanna|wish|hope|hoping|goal|target|aim|aiming|plan|planning|planned|try|trying|"
    r"would|could|should|might|if|unless|suppose|supposing|imagine|assuming|once|dream|ideal|need|needs|going\s+to|gonna|will|used\s+to|"
    r"wil|wilt|willen|wou|wilde|wished|wens|hoop|doel|streef|streefgewicht|streven|zou|zouden|moet|moeten|indien|mocht|ooit|"
    r"vroeger|ga|gaat|gaan|zal|usually|normally|generally|typically|always|often|never|meestal|normaal|"
    r"gewoonlijk|altijd|vaak|nooit|stel\s+dat|wat\s+als|als\s+(?:ik|je|we|wij)|when\s+i\s+was|toen\s+ik|"
    r"have\s+to|has\s+to|tomorrow|tonight|morgen|overmorgen|next|volgende)\b"
    r"|'d\b|'ll\b)"
)
# A change, not a level: "lost 3 kg", "down two pounds", "5 kilo afgevallen", "2 kg lighter".
CHANGE_BEFORE = re.compile(
    r"(?i:\b(?:lost|lose|losing|gained|gain|gaining|dropped|shed|put\s+on|down|up|another|extra|from|loss\s+of|verlies\s+van|"
    r"afgevallen|aangekomen|kwijt|min|plus)\s+(?:about\s+|around\s+|almost\s+|nearly\s+|ongeveer\s+|bijna\s+)?"
    r"|[-+\u2212]\s*)$"
)
CHANGE_AFTER = re.compile(
    r"(?i:\s*(?:less|more|lighter|heavier|down|up|off|minder|meer|lichter|zwaarder|afgevallen|aangekomen|"
    r"kwijt|erbij|eraf|eraf)\b)"
)
HABIT_AFTER = re.compile(
    r"(?i:^[^.!?;,]{0,20}?\b(?:a|per|every|each|elke|iedere|in\s+de|op\s+een)\s+(?:day|night|week|month|dag|"
    r"nacht|week|maand)\b|^\s*(?:daily|weekly|dagelijks|wekelijks)\b)"
)
# A cue and its number are in one clause: "Lotte ran 10 km and I ran 5 km" does not pair "10 km" with the
# second "ran". A conjunction before another subject starts a new clause ("maar 4 uur" is "only 4 hours").
GAP_BREAK = re.compile(
    r";|(?i:\b(?:and|but|while|whereas|en|maar|terwijl)\s+)(?:(?i:i|i'm|ik|we|wij|he|she|they|hij|zij|ze)\b"
    r"|[A-Z][a-z]+)"
)
GOAL_AFTER = re.compile(r"(?i:\b(?:goal|target|aim|doel|streven|by\s+(?:the\s+end|summer|next))\b)")
# "om 11 uur", "at 7 hours"? A time of day, not a duration.
CLOCK_BEFORE = re.compile(r"(?i:\b(?:om|at|till|until|tot|since|sinds|by)\s+)$")
# "my son and I ran 5 km" is the owner's run too
WITH_ME = re.compile(r"(?i:\b(?:and\s+i|and\s+me|en\s+ik|i\s+and|ik\s+en)\b)")
# A level in the past is history, not a reading now: "I was 95 kg two years ago".
LONG_AGO = re.compile(
    r"(?i:\b(?:last\s+(?:year|month|summer|winter)|(?:years?|months?)\s+ago|back\s+then|vorig\s+jaar|"
    r"(?:jaar|maanden)\s+geleden|toen)\b)"
)
# An object weighed, not the owner: "weighed the suitcase: 23 kg", "woog mijn tas".
OBJECT_WEIGHED = re.compile(r"(?i:^\s*(?:the|a|an|my|our|his|her|their|de|het|een|mijn|onze|ons)\s+(?!own\b)\w)")
CLAUSE_START = re.compile(
    r"(?i:[;:]\s*|,\s*(?:and|but|while|whereas|en|maar|terwijl)\s+|,\s*(?=(?:i|i'm|ik|we)\s)|\s(?:and|but|while|whereas|en|maar|terwijl)"
    r"\s+(?=(?:i|i'm|ik|me|we)\b))"
)
YESTERDAY = re.compile(r"\b(?:yesterday|last night|gisteren|gisteravond|vannacht)\b", _I)
DAYS_AGO = re.compile(r"\b(\d{1,2}|" + "|".join(_WORDS) + r")\s+(?:days?\s+ago|dagen\s+geleden)\b", _I)
DAY_BEFORE = re.compile(r"\b(?:the\s+day\s+before\s+yesterday|eergisteren)\b", _I)
_WEEKDAYS = [
    r"monday|maandag", r"tuesday|dinsdag", r"wednesday|woensdag", r"thursday|donderdag", r"friday|vrijdag",
    r"saturday|zaterdag", r"sunday|zondag",
]  # fmt: skip
WEEKDAY = re.compile(r"\b(?:on\s+|last\s+|op\s+|afgelopen\s+|vorige\s+)?(" + "|".join(_WEEKDAYS) + r")\b", _I)
# Cheap first look: without a digit, a number word or a race there is nothing to read.
ANY_NUMBER = re.compile(r"\d|\b(?:" + "|".join(_WORDS) + r")\b|marathon", _I)
RACES = {"marathon": 42.195, "half marathon": 21.097, "halve marathon": 21.097}
DEFAULT_UNIT = {"steps": "steps", "resting_heart_rate": "bpm", "heart_rate": "bpm", "body_weight": "kg"}
# A weight without a unit is taken as kilograms only where it cannot be an adult's weight in pounds.
BARE_KILOGRAMS = (35, 150)


def number(text: str, *, counted: bool = False) -> float:
    """`78.2`, Dutch `78,2`, thousands `10,000`, for counts also Dutch `10.000`, and small number words."""
    if text.lower() in _WORDS:
        return float(_WORDS[text.lower()])
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", text) or (counted and re.fullmatch(r"\d{1,3}(?:[.,]\d{3})+", text)):
        return float(text.replace(",", "").replace(".", ""))
    return float(text.replace(",", "."))


def canonical(value: float, unit: str) -> tuple[float, str]:
    """A value in its metric's canonical unit (kg, km, h, min, bpm, steps); unknown units stay as given."""
    canonical_unit, factor = UNITS.get(unit.lower(), (unit.lower(), 1.0))
    return round(value * factor, 3), canonical_unit


def _value(match: re.Match[str], metric: str) -> tuple[float, str] | None:
    """The measured value in canonical units, or None when it makes no sense for the metric."""
    found = match.groupdict()
    if found.get("clock"):
        return None  # a bare clock time is only a duration next to a distance (see _minutes)
    if race := found.get("race"):
        return RACES[re.sub(r"[\s-]+", " ", race.lower())], "km"
    value = number(found["value"], counted=metric == "steps") + (0.5 if found.get("half") else 0.0)
    if found.get("k"):
        value *= 1000
    unit = found.get("unit") or DEFAULT_UNIT.get(metric, "")
    value, unit = canonical(value, unit)
    if unit == "h":
        value += int(found.get("mins") or found.get("mins2") or 0) / 60
    if metric.endswith("_duration") and metric != "sleep_duration":
        value, unit = (_minutes(match, metric, distance=None) or 0.0), "min"
    low, high = PLAUSIBLE.get(metric, (0, 1000))
    if metric == "body_weight" and not found.get("unit"):
        low, high = BARE_KILOGRAMS
    return (round(value, 3), unit) if low <= value <= high and value > 0 else None


def _minutes(match: re.Match[str], metric: str, distance: float | None) -> float | None:
    """A duration match in minutes; `h:mm` or `mm:ss` is read by the pace it would give over `distance`."""
    found = match.groupdict()
    if clock := found.get("clock"):
        parts = [int(part) for part in clock.split(":")]
        if len(parts) == 3:
            return round(parts[0] * 60 + parts[1] + parts[2] / 60, 3)
        fastest = _FASTEST_PACE.get(metric.split("_")[0], 0.0)
        as_minutes = parts[0] + parts[1] / 60
        too_fast = distance is not None and as_minutes / distance < fastest
        return round(parts[0] * 60 + parts[1], 3) if too_fast else round(as_minutes, 3)
    value = number(found["value"]) + (0.5 if found.get("half") else 0.0)
    unit = (found.get("unit") or "").lower()
    if UNITS.get(unit, ("",))[0] == "h":
        return round(value * 60 + int(found.get("mins") or found.get("mins2") or 0), 3)
    return round(value + int(found.get("secs") or 0) / 60, 3)


def _clause_start(sentence: str, position: int) -> int:
    starts = [found.end() for found in CLAUSE_START.finditer(sentence) if found.end() <= position]
    return starts[-1] if starts else 0


def _observed_by_owner(sentence: str, match: re.Match[str], value_at: int, rule: Rule) -> bool:
    """Whether this match is the owner's own, current level: see the module docstring."""
    start = _clause_start(sentence, min(match.start(), value_at))
    lead = sentence[start:value_at]
    clause = sentence[start : match.end()]
    if SOMEONE_ELSE.search(clause) and not WITH_ME.search(clause):
        return False
    if NOT_OBSERVED.search(clause) or LONG_AGO.search(lead):
        return False
    after_value = match.end("unit") if match.groupdict().get("unit") else value_at
    if CHANGE_BEFORE.search(lead) or CHANGE_AFTER.match(sentence, after_value):
        return False
    if rule.measure in ("hours", "duration") and CLOCK_BEFORE.search(lead):
        return False
    tail = re.split(r"[\d,;.!?]", sentence[after_value:], maxsplit=1)[0]
    if HABIT_AFTER.search(sentence[match.end() :]) or LONG_AGO.search(tail):
        return False
    gap = match.groupdict().get("gap") or ""
    if GAP_BREAK.search(gap) or GOAL_AFTER.search(sentence, value_at, _clause_end(sentence, value_at)):
        return False
    return not (rule.metric == "body_weight" and match.start() < value_at and OBJECT_WEIGHED.match(gap))


def _number_span(match: re.Match[str]) -> tuple[int, int]:
    found = match.groupdict()
    name = next(name for name in ("clock", "race", "value") if found.get(name))
    return match.span(name)


def _clause_end(sentence: str, position: int) -> int:
    ends = [found.start() for found in CLAUSE_START.finditer(sentence) if found.start() >= position]
    return ends[0] if ends else len(sentence)


def _clause(sentence: str, position: int) -> str:
    """The clause around `position`: a time word there outranks one elsewhere in the sentence."""
    return sentence[_clause_start(sentence, position) : _clause_end(sentence, position)]


def _occurred(sentence: str, said_at: datetime | None, position: int) -> datetime | None:
    if said_at is None:
        return None
    clause = _clause(sentence, position)
    if any(pattern.search(clause) for pattern in (DAYS_AGO, DAY_BEFORE, YESTERDAY, WEEKDAY, TODAY)):
        sentence = clause
    if ago := DAYS_AGO.search(sentence):
        return moment_after(said_at, -timedelta(days=number(ago[1])))
    if DAY_BEFORE.search(sentence):
        return moment_after(said_at, -timedelta(days=2))
    if YESTERDAY.search(sentence):
        return moment_after(said_at, -timedelta(days=1))
    if weekday := WEEKDAY.search(sentence):
        index = next(i for i, names in enumerate(_WEEKDAYS) if re.fullmatch(names, weekday[1], _I))
        return moment_after(said_at, -timedelta(days=(said_at.weekday() - index) % 7))
    return said_at


TODAY = re.compile(r"\b(?:today|this\s+(?:morning|afternoon|evening)|tonight|vandaag|vanochtend|vanmorgen|"
                   r"vanmiddag|vanavond)\b", _I)  # fmt: skip


def find_readings(sentence: str, evidence: EvidenceRef, said_at: datetime | None) -> list[ReadingCandidate]:
    if sentence.rstrip().endswith("?") or not ANY_NUMBER.search(sentence):
        return []  # a question asks, it does not report; and most sentences hold no number at all
    found: list[ReadingCandidate] = []
    taken: list[tuple[int, int]] = []  # each number is one reading at most

    def free(span: tuple[int, int]) -> bool:
        return not any(start < span[1] and span[0] < end for start, end in taken)

    for pattern, rule in PATTERNS:
        for match in pattern.finditer(sentence):
            span = _number_span(match)
            if not free(span) or not _observed_by_owner(sentence, match, span[0], rule):
                continue
            if (measured := _value(match, rule.metric)) is None:
                continue
            taken.append(span)
            occurred = _occurred(sentence, said_at, span[0])
            found.append(ReadingCandidate(rule.metric, measured[0], measured[1], evidence, occurred))
            if rule.measure in ("distance", "k", "race") and (
                timed := RUN_TIME.match(sentence, span[1] if rule.measure == "race" else match.end("unit"))
            ):
                timed_span = _number_span(timed)
                minutes = _minutes(timed, rule.metric, measured[0])
                if free(timed_span) and minutes:
                    taken.append(timed_span)
                    duration = rule.metric.replace("_distance", "_duration")
                    found.append(ReadingCandidate(duration, minutes, "min", evidence, occurred))
    return found

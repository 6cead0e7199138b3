"""Query words for the keyword leg: the words of a question that can tell memories apart.

Stored text is indexed by PostgreSQL's parser (`simple`: lower-cased, as written; and `english` stems). The
query is cut by that same parser, so identifiers keep the shape they were stored in ("ABC-1234" is `abc`
and `-1234`, "4.12" and "billing@acme.test" stay whole), and stop words of English and Dutch are dropped,
since with no stop list of its own `simple` would let "did" and "the" match everything. A stop word written
as a name (capitalised, not opening a sentence: "Ben", "Will", "May", "Dan" in Dutch) is a name and stays.
"""

from __future__ import annotations

import re

from django.db import connection

MAX_TERMS = 16
_STOPWORD_TEXT = """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't could couldn't did didn't do does doesn't doing don't down during each few for
    from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
    himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't
    my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she
    she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under until up very was
    wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who who's
    whom why why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    s t d ll re ve m also just get got ever still will kind likely would
    de het een en van ik je jij u hij zij ze wij we jullie mijn jouw zijn haar ons onze hun is was waren ben
    bent heb hebt heeft hebben had aan op in uit met voor naar bij om over door dat die dit deze wat wie waar
    wanneer hoe waarom niet geen ook nog al maar of dan als er te tot
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# A capitalised word that does not open the text or a sentence (nor follows a quote or bracket that may).
_NAME = re.compile(r"(?<=[^\s.!?:;\"'(\[])\s+([A-Z][a-z]+)\b")


def names(text: str) -> set[str]:
    """Lower-cased words written as names: capitalised, and not where any word would be capitalised."""
    return {match.lower() for match in _NAME.findall(text)}


# Text the parser cuts into nothing but runs of ASCII letters and digits: those characters, spaces, and
# punctuation that only ever separates words (a full stop only before a space or at the end: "e.g" and "4.12" are
# one token to the parser). tests/memory/test_recall_questions.py compares the two cuts on such text.
_PLAIN = re.compile(r"(?:[A-Za-z0-9 \t\n,;:?!'\"()]|\.(?=[ \t\n]|$))*")
_RUN = re.compile(r"[A-Za-z0-9]+")


def words_as_parsed(text: str) -> list[str]:
    """The distinct words of `text` in the order they first appear, as to_tsvector('simple') cuts them: for plain
    text (most questions) here, without a round trip; for anything else by PostgreSQL itself."""
    text = text[:4000]
    runs = _RUN.findall(text) if _PLAIN.fullmatch(text) else None
    if runs is not None and all(len(run) < 256 for run in runs):  # a very long word: the parser decides
        return list(dict.fromkeys(run.lower() for run in runs))
    with connection.cursor() as cursor:
        cursor.execute("SELECT lexeme FROM unnest(to_tsvector('simple', %s)) ORDER BY positions[1], lexeme", [text])
        return [row[0] for row in cursor.fetchall()]


def query_terms(text: str) -> list[str]:
    """Distinct content words of the query in the order they appear, as the index parser cuts them; at most
    MAX_TERMS."""
    words = words_as_parsed(text)
    kept = names(text) & STOPWORDS
    return [word for word in words if (word not in STOPWORDS or word in kept) and (len(word) > 1 or word.isdigit())][
        :MAX_TERMS
    ]

"""Query words for the keyword leg: the words of a question that can tell memories apart.

Stored text is indexed with PostgreSQL's `simple` configuration (lower-cased, no stemming, so Dutch and
English behave alike); query words are cut the same way and stop words of both languages are dropped, since
with no stop list of its own `simple` would let "did" and "the" match everything.
"""

from __future__ import annotations

import re

MAX_TERMS = 16
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
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


def query_terms(text: str) -> list[str]:
    """Distinct content words of the query, in order, lower-cased; at most MAX_TERMS."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word not in STOPWORDS and word not in seen and (len(word) > 1 or word.isdigit()):
            seen[word] = None
    return list(seen)[:MAX_TERMS]


def any_of(terms: list[str]) -> str:
    """A `websearch_to_tsquery` text matching any of the terms ("a or b or c")."""
    return " or ".join(terms)

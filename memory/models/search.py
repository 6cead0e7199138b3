"""How stored text is indexed for the keyword leg of search: each text twice, once as written (`simple`:
lower-cased words, any language) and once as English stems (`english`: "painted" is found by "paint").
Queries match either form (memory.recall.legs)."""

from __future__ import annotations

from django.contrib.postgres.search import SearchVector
from django.db.models import Expression

SEARCH_CONFIGS = ("simple", "english")


def searchable(*fields: str) -> Expression:
    as_written, stemmed = (SearchVector(*fields, config=config) for config in SEARCH_CONFIGS)
    return as_written + stemmed

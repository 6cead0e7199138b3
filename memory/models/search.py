"""How stored text is indexed for the keyword leg of search: each text twice, once as written (`simple`:
lower-cased words, any language) and once as English stems (`english`: "painted" is found by "paint").
Queries match either form (memory.recall.legs)."""

from __future__ import annotations

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db.models import Expression

SEARCH_CONFIGS = ("simple", "english")


def searchable(*fields: str) -> Expression:
    as_written, stemmed = (SearchVector(*fields, config=config) for config in SEARCH_CONFIGS)
    return as_written + stemmed


def words_of(text: str) -> SearchQuery:
    """What a person types to find stored text by its words (quotes, `or`, `-word`), matched against `searchable`."""
    return SearchQuery(text, search_type="websearch", config="simple")

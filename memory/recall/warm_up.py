"""The query embedder made ready right after a web process starts, where this service has searched before.

A process's first embedding makes the ONNX session (~250 ms for the local MiniLM): the first question after every
start or deploy paid it. Where no search was ever made (an install that only ingests, or only serves MCP's other
tools), nothing is loaded: the model's memory is spent only where searches come.
"""

from __future__ import annotations

import logging
import os

from django.conf import settings

from memory.uses import use_noted, used_before

logger = logging.getLogger("memory.recall")
SEARCHED_KEY = "uses:searched"
_noted_by = 0  # the process that noted a search (a forked child notes again: once per process, one Redis write)


def search_noted() -> None:
    """Called after a query was embedded: the next start of any web process makes the embedder ready at once."""
    global _noted_by
    if _noted_by != os.getpid():
        _noted_by = os.getpid()
        use_noted(SEARCHED_KEY)


def query_embedder_warmed() -> bool:
    """Embeds a word with the active embedder if this service has searched before (and QUERY_EMBEDDER_WARM_UP is on);
    whether it did. An embedder that is unavailable is logged as a search would log it, and left for the first
    search to try again."""
    from memory.recall.search import query_vector

    if not settings.QUERY_EMBEDDER_WARM_UP or not used_before(SEARCHED_KEY):
        return False
    vector, model_id = query_vector("warm-up")
    if vector is None:
        return False
    logger.info("recall.embedder_warmed", extra={"model": model_id})
    return True

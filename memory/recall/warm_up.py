"""The local query embedder made ready right after a web process starts, where this service has searched before.

A process's first embedding makes the ONNX session: ~250 ms for the local MiniLM (docs/benchmarks.md, issue 18,
twenty-first pass), paid by the first question after every start or deploy. Where no search was ever made (an
install that only ingests), nothing is loaded. A remote embedder (EMBEDDER=openai) is left alone: nothing of it
stays warm between calls, and a call may cost money.
"""

from __future__ import annotations

import logging
import os

from django.conf import settings

from memory.uses import use_note, used_before

logger = logging.getLogger("memory.recall")
SEARCHED_KEY = "uses:searched"
_noted_by = 0  # the process that noted a search (a forked child notes again: once per process, one Redis write)


def search_note() -> None:
    """Called once a search's query is embedded: the next start of any web process makes the embedder ready."""
    global _noted_by
    if _noted_by != os.getpid():
        _noted_by = os.getpid()
        use_note(SEARCHED_KEY)


def query_embedder_warmed() -> bool:
    """Embeds a word with the local embedder if this service has searched before (not when Redis cannot say) and
    QUERY_EMBEDDER_WARM_UP is on; whether it did. An embedder that cannot load is logged, as a search logs it, and
    left for the first search to try again."""
    from memory.embeddings import EmbedderUnavailable, get_embedder

    if not settings.QUERY_EMBEDDER_WARM_UP or settings.EMBEDDER != "minilm":
        return False
    if not used_before(SEARCHED_KEY, unknown=False):
        return False
    try:
        get_embedder().embed_query("warm-up")
    except EmbedderUnavailable as exc:
        logger.warning("recall.embedder_unavailable", extra={"reason": str(exc)})
        return False
    logger.info("recall.embedder_warmed")
    return True

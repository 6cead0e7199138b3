"""Streaming a generated body without holding it in memory, under WSGI and ASGI alike."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest


def streamed(request: HttpRequest, pieces: Generator[bytes]) -> Iterator[bytes] | AsyncIterator[bytes]:
    """Under ASGI Django would read a plain iterator whole before sending it; there each piece is taken from
    the iterator in the request's thread as the client reads, so memory holds one piece at a time. `request`
    may be DRF's wrapper of the Django request."""
    if not isinstance(getattr(request, "_request", request), ASGIRequest):
        return pieces
    step = sync_to_async(lambda: next(pieces, None), thread_sensitive=True)

    async def pieces_async() -> AsyncIterator[bytes]:
        try:
            while (piece := await step()) is not None:
                yield piece
        finally:
            await sync_to_async(pieces.close, thread_sensitive=True)()

    return pieces_async()

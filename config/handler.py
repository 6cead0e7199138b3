"""Django over ASGI with one thread hop per request.

Every view and middleware of this project is synchronous. Django's own ASGIHandler serves such a request with
three hops between the event loop and a thread (the request_started signal, the middleware chain and view,
response.close() with request_finished), each on a thread made anew for the request (asgiref's
ThreadSensitiveContext), plus a task listening for a disconnect that a sync view could not act on anyway. On this
2-core machine that was about a third of an empty call. `OneHopHandler` reads the body on the loop, then runs
the signal, the middleware chain, the view and the closing in one hop on a pool of reused threads, and sends the
answer from the loop. A streaming answer (artifacts, ranges) is closed after it is sent, as before.

Threads are reused, so a thread's database connection must not outlive its request: request_finished closes it
(returns it to the pool in the web process), as it does under Django's handler.

An ordinary call of the hot read endpoints is answered by the fast lane (memory.api.lane) before the middleware
chain: same request, same signals, the chain and the view skipped; the lane hands anything else back.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers import base
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import FileResponse, HttpRequest, HttpResponseBase
from django.urls import set_script_prefix

if TYPE_CHECKING:
    from memory.api.lane import FastLane

logger = logging.getLogger("memory.api")


class OneHopHandler(ASGIHandler):
    def __init__(self) -> None:
        base.BaseHandler.__init__(self)
        self.load_middleware(is_async=False)  # the whole chain runs on the request's thread
        self.executor = ThreadPoolExecutor(max_workers=settings.WEB_THREADS, thread_name_prefix="web")
        self._lane: FastLane | None = None  # made on the first POST: it imports the API and walks the URLs

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            respond = sync_to_async(self._respond, thread_sensitive=False, executor=self.executor)
            response = await respond(scope, body_file)
            try:
                await self.send_response(response, send)
            finally:
                if response.streaming:
                    await sync_to_async(response.close, thread_sensitive=False, executor=self.executor)()
        finally:
            body_file.close()

    def _respond(self, scope: dict[str, Any], body_file: Any) -> HttpResponseBase:
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, refusal = self.create_request(scope, body_file)
        if request is None:  # a body Django could not take (bad encoding, too large)
            assert refusal is not None
            response = refusal
        else:
            answered = self._lane_answer(request)
            response = answered if answered is not None else self.get_response(request)
            response._handler_class = self.__class__  # type: ignore[attr-defined]
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        if not response.streaming:
            response.close()  # its content is in memory: request_finished runs here, in the request's thread
        return response

    def _lane_answer(self, request: HttpRequest) -> HttpResponseBase | None:
        if request.method != "POST" or not settings.REST_FAST_LANE:  # the lane is made on the first POST
            return None
        if self._lane is None:
            from memory.api.lane import FastLane

            self._lane = FastLane()
        try:
            return self._lane.answer(request)
        except Exception:  # the lane's own fault: Django's path answers, with what the lane handed over
            logger.exception("api.fast_lane_failed")
            return None

"""The ASGI application: Django over HTTP, websockets through Channels, and the ASGI lifespan.

Channels' ProtocolTypeRouter does not route `lifespan`; `LifespanApp` answers it, and runs the startup and
shutdown hooks that need the event loop (the MCP session manager). The MCP paths (/mcp, /sse, /messages/) go
to the MCP transports before Django: they have their own token gate and stream their answers. The transports
are built in a thread once the server is up where this service has served MCP before, else on the first MCP
request (`LazyMcpTransports`), so the MCP SDK's import does not delay /healthz, REST or the web UI on start, and
costs no memory where MCP is not used. The query embedder is made ready the same way, where this service has searched
before (`query_embedder`, memory.recall.warm_up).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import django
from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.conf import settings

from config.embedded import ensure_started, release

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DB_POOL", "1")  # see DB_POOL in config/settings.py
ensure_started(settings.EMBEDDED_RUNTIME)
django.setup(set_prefix=False)  # as get_asgi_application() does; its handler is replaced by config.handler's
from config.handler import OneHopHandler  # noqa: E402  (needs Django set up)

django_app = OneHopHandler()

from config.routing import websocket_urlpatterns  # noqa: E402  (needs Django set up)
from mcp_bridge.paths import is_mcp_path  # noqa: E402

if TYPE_CHECKING:
    from mcp_bridge.asgi import McpTransports

logger = logging.getLogger("memory.web")
Hook = Callable[[], Awaitable[None]]
# What a web process prepares after start (the MCP transports, the query embedder) waits this long: the first
# requests (a health check, the URL configuration's imports) should not wait for work that holds the interpreter lock.
WARM_UP_AFTER_S = 2.0


class LifespanApp:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.on_startup: list[Hook] = []
        self.on_shutdown: list[Hook] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    for hook in self.on_startup:
                        await hook()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for hook in self.on_shutdown:
                    await hook()
                await send({"type": "lifespan.shutdown.complete"})
                return


class WarmUp:
    """Lifespan: `job` run WARM_UP_AFTER_S after start-up, as a task, so the server answers at once; cancelled at
    shutdown if it has not run. A failure is logged: the first use prepares what it needs itself, as before."""

    def __init__(self, job: Callable[[], Awaitable[bool]], name: str) -> None:
        self._job = job
        self._name = name
        self._task: asyncio.Task[bool] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._later())

    async def _later(self) -> bool:
        await asyncio.sleep(WARM_UP_AFTER_S)
        try:
            return await self._job()
        except Exception:
            logger.exception("web.warm_up_failed", extra={"job": self._name})
            return False

    async def stop(self) -> None:
        if self._task is not None:
            if not self._task.done():
                self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class LazyMcpTransports:
    """The MCP transports, built on first need. The SDK (pydantic models of every protocol version) was half of
    the web process's import time and is ~30 MB of its memory. Where this service has served MCP before
    (mcp_bridge.served), the lifespan builds them in a thread right after start-up; elsewhere the first MCP request
    builds them (1-2 s, once per process) and notes that MCP is used, so later starts build them at once. A /mcp call
    that comes during a build waits for it."""

    def __init__(self) -> None:
        self._built: asyncio.Future[McpTransports] | None = None
        self._warming = WarmUp(self.warm_up_if_served, "mcp transports")  # /mcp never waits: an early call builds
        self._noted = False

    @property
    def built(self) -> bool:
        """Whether the transports were built (or are being built) in this process."""
        return self._built is not None

    async def get(self) -> McpTransports:
        if self._built is None:
            self._built = asyncio.ensure_future(asyncio.to_thread(_build_transports))
        # Shielded: a caller that goes away must not cancel the build the others wait for.
        return await asyncio.shield(self._built)

    async def warm_up(self) -> None:
        """Lifespan start-up: decide and build in the background, so the server answers at once."""
        await self._warming.start()

    async def warm_up_if_served(self) -> bool:
        """Build and start the transports if this service has served MCP before; whether it did."""
        from mcp_bridge.served import mcp_served_before

        if not await asyncio.to_thread(mcp_served_before):
            return False
        await (await self.get()).start()
        return True

    async def stop(self) -> None:
        await self._warming.stop()
        if self._built is not None and self._built.done() and not self._built.exception():
            await self._built.result().stop()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not self._noted:
            from mcp_bridge.served import mcp_served_note

            self._noted = True  # once per process: one Redis write, before its first MCP answer
            await asyncio.to_thread(mcp_served_note)
        await (await self.get())(scope, receive, send)


async def query_embedder_warm_up() -> bool:
    """Load the query embedder, off the event loop, if this service has searched before (memory.recall.warm_up)."""
    from memory.recall.warm_up import query_embedder_warmed

    return await asyncio.to_thread(query_embedder_warmed)


async def redis_debts_settled() -> bool:
    """What a process killed before Redis answered owed it (memory.services.redis_debts), done off the event loop."""
    from memory.services.redis_debts import debts_settled_here

    return bool(await asyncio.to_thread(debts_settled_here))


def _build_transports() -> McpTransports:
    from mcp_bridge.asgi import McpTransports

    return McpTransports()


class McpRouter:
    """The MCP transports for their paths, the rest to `app`."""

    def __init__(self, app: Any, transports: LazyMcpTransports) -> None:
        self.app = app
        self.transports = transports

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and is_mcp_path(scope["path"]):
            await self.transports(scope, receive, send)
        else:
            await self.app(scope, receive, send)


async def flush_tool_events() -> None:
    # Rows of the last calls still queued (memory.services.telemetry): written before the database may stop.
    from memory.services.telemetry import tool_events_flush

    await asyncio.to_thread(tool_events_flush)


async def try_redis_writes_once_more() -> None:
    # A memory version's change or an erasure's cache drop still waiting for Redis (config.redis_retry).
    from config.redis_retry import tried_once_more

    await asyncio.to_thread(tried_once_more)


async def release_embedded_runtime() -> None:
    # uvicorn re-raises SIGTERM after a graceful shutdown, so atexit never runs in this process: give up the
    # lease here, while shutdown is still orderly (the last user stops the embedded servers).
    await asyncio.to_thread(release, settings.EMBEDDED_RUNTIME)


mcp_transports = LazyMcpTransports()
application = LifespanApp(
    McpRouter(
        ProtocolTypeRouter(
            {
                "http": django_app,
                "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
            }
        ),
        mcp_transports,
    )
)
query_embedder = WarmUp(query_embedder_warm_up, "query embedder")
redis_debts = WarmUp(redis_debts_settled, "redis debts")
application.on_startup.append(mcp_transports.warm_up)
application.on_startup.append(query_embedder.start)
application.on_startup.append(redis_debts.start)
application.on_shutdown.append(mcp_transports.stop)
application.on_shutdown.append(query_embedder.stop)
application.on_shutdown.append(redis_debts.stop)
application.on_shutdown.append(flush_tool_events)
application.on_shutdown.append(try_redis_writes_once_more)
application.on_shutdown.append(release_embedded_runtime)

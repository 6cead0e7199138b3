"""The ASGI application: Django over HTTP, websockets through Channels, and the ASGI lifespan.

Channels' ProtocolTypeRouter does not route `lifespan`; `LifespanApp` answers it, and runs the startup and
shutdown hooks that need the event loop (the MCP session manager). The MCP paths (/mcp, /sse, /messages/) go
to the MCP transports before Django: they have their own token gate and stream their answers.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

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
from mcp_bridge.asgi import McpTransports, is_mcp_path  # noqa: E402  (needs Django set up)

Hook = Callable[[], Awaitable[None]]


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


class McpRouter:
    """The MCP transports for their paths, the rest to `app`."""

    def __init__(self, app: Any, transports: McpTransports) -> None:
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


async def release_embedded_runtime() -> None:
    # uvicorn re-raises SIGTERM after a graceful shutdown, so atexit never runs in this process: give up the
    # lease here, while shutdown is still orderly (the last user stops the embedded servers).
    await asyncio.to_thread(release, settings.EMBEDDED_RUNTIME)


mcp_transports = McpTransports()
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
application.on_startup.append(mcp_transports.start)
application.on_shutdown.append(mcp_transports.stop)
application.on_shutdown.append(flush_tool_events)
application.on_shutdown.append(release_embedded_runtime)

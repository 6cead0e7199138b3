"""The web process builds its MCP transports (the SDK: ~30 MB and 1-2 s) right after start only where this service
has served MCP before; where it never has, the first MCP call builds them (config.asgi.LazyMcpTransports)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache

from config.asgi import LazyMcpTransports
from mcp_bridge.served import SERVED_KEY
from tests.conftest import Persona
from tests.mcp.conftest import McpService, rpc
from tests.process import child_env, free_port

T = TypeVar("T")


def run_on_a_fresh_loop(coroutine: Callable[[], Awaitable[T]]) -> T:
    """Run on a thread of its own: an earlier test of the session may leave an event loop running on this one."""

    async def awaited() -> T:
        return await coroutine()

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, awaited()).result()


def test_a_service_that_never_served_mcp_leaves_the_transports_unbuilt_at_start() -> None:
    cache.delete(SERVED_KEY)
    transports = LazyMcpTransports()

    assert run_on_a_fresh_loop(transports.warm_up_if_served) is False
    assert transports.built is False


def test_a_service_that_served_mcp_before_builds_and_starts_them_at_start() -> None:
    cache.set(SERVED_KEY, 1, timeout=None)
    transports = LazyMcpTransports()

    async def warmed_and_stopped() -> bool:
        try:
            return await transports.warm_up_if_served()
        finally:
            await transports.stop()

    assert run_on_a_fresh_loop(warmed_and_stopped) is True
    assert transports.built is True


def test_the_first_call_to_a_server_that_never_served_mcp_is_answered_and_remembered(mcp_owner: Persona) -> None:
    cache.delete(SERVED_KEY)
    env = child_env(settings.DATABASES["default"]["NAME"], ALLOWED_HOSTS="127.0.0.1,localhost")
    service = McpService(port=free_port(), env=env, log=Path(settings.DATA_DIR) / "mcp-cold-server.log")
    service.start()
    try:
        listed = rpc(service, mcp_owner, "tools/list")
    finally:
        service.stop()

    assert listed.status_code == 200, listed.text
    assert "search_memory" in {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert cache.get(SERVED_KEY) is not None  # the next start of any web process builds them at once

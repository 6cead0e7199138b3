"""A real MCP server for the tests: uvicorn with `config.asgi` on a free loopback port, on the test database.

The server is another process, so tests that give it data use `transactional_db` (committed rows). Tokens
are issued with the `full` profile unless a test says otherwise. `rpc()` speaks raw JSON-RPC to the
stateless `/mcp` endpoint (one POST per message, as any client does after initialize); tests that need the
SDK's own client use `sdk_session()`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from django.conf import settings

from memory.models import Scope, ToolProfile, User
from tests.conftest import Persona, issue
from tests.process import AsgiService, child_env, free_port

ARTIFACT_CAP = 4096  # artifact_put's cap on the test server, so a test can pass it cheaply
BODY_CAP = 256 * 1024  # one MCP message's cap on the test server
REAL_HOSTNAME = "memory.example.test"  # listed in the server's ALLOWED_HOSTS, as a deployment would


McpService = AsgiService  # the MCP endpoints are served by the whole ASGI application


@pytest.fixture(scope="session")
def mcp_service(django_db_setup: None, django_db_blocker: Any) -> Iterator[McpService]:
    env = child_env(
        settings.DATABASES["default"]["NAME"],
        ALLOWED_HOSTS=f"127.0.0.1,localhost,{REAL_HOSTNAME}",
        RATE_LIMIT_PER_MINUTE="100000",
        MCP_ARTIFACT_MAX_BYTES=str(ARTIFACT_CAP),
        MCP_MAX_BODY_BYTES=str(BODY_CAP),
    )
    service = McpService(port=free_port(), env=env, log=Path(settings.DATA_DIR) / "mcp-server.log")
    service.start()
    try:
        yield service
    finally:
        service.stop()


def mcp_persona(user: User, label: str, **options: Any) -> Persona:
    """A token for MCP: every scope and the full profile unless told otherwise."""
    return issue(user, label, **({"scopes": Scope.values, "profile": ToolProfile.FULL} | options))


@pytest.fixture
def mcp_owner(transactional_db: None, alice: User) -> Persona:
    return mcp_persona(alice, "mcp-owner", allow_query_token=True)


@pytest.fixture
def mcp_other(transactional_db: None, bob: User) -> Persona:
    return mcp_persona(bob, "mcp-other")


def headers_of(persona: Persona | None, **extra: str) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **extra}
    if persona is not None:
        headers["Authorization"] = f"Bearer {persona.secret}"
    return headers


def rpc(service: McpService, persona: Persona | None, method: str, params: dict[str, Any] | None = None,
        **headers: str) -> httpx.Response:  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return httpx.post(f"{service.url}/mcp", json=body, headers=headers_of(persona, **headers), timeout=60)


@dataclass
class ToolAnswer:
    is_error: bool
    payload: Any  # the JSON the tool answered (the error shape when is_error)

    @property
    def code(self) -> str:
        return str(self.payload.get("error", {}).get("code", "")) if isinstance(self.payload, dict) else ""


def call(service: McpService, persona: Persona | None, tool: str, arguments: dict[str, Any] | None = None,
         **headers: str) -> ToolAnswer:  # fmt: skip
    response = rpc(service, persona, "tools/call", {"name": tool, "arguments": arguments or {}}, **headers)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    text = result["content"][0]["text"]
    return ToolAnswer(is_error=bool(result.get("isError")), payload=json.loads(text))


def rest(service: McpService, persona: Persona, path: str, body: dict[str, Any] | None = None) -> Any:
    """The REST answer from the same server, for comparing with a tool's."""
    response = httpx.post(f"{service.url}{path}", json=body or {}, headers=headers_of(persona), timeout=60)
    assert response.status_code < 300, response.text
    return response.json()


@contextlib.asynccontextmanager
async def sdk_session(url: str, persona: Persona, transport: str = "http") -> AsyncIterator[Any]:
    """An initialized session of the official SDK client over /mcp ("http") or /sse ("sse")."""
    from mcp import ClientSession
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    auth = {"Authorization": f"Bearer {persona.secret}"}
    if transport == "sse":
        async with sse_client(f"{url}/sse", headers=auth) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
        return
    async with (
        httpx2.AsyncClient(headers=auth, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session

"""The three transports with the official SDK client: Streamable HTTP (/mcp), legacy SSE (/sse +
/messages/) and stdio; credentials bound to SSE sessions; Host and Origin checks; a restart mid-session."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import anyio
import httpx
import pytest
from django.conf import settings
from django.db import connections

from config.celery import app as celery_app
from memory.models import User
from memory.pipeline.runner import run_operation
from tests.conftest import Persona
from tests.mcp.conftest import REAL_HOSTNAME, McpService, headers_of, mcp_persona, rest, rpc, sdk_session
from tests.process import ROOT, child_env

TEXT = "I prefer oat milk in my coffee. I'll send the budget to Marcel by Friday."


@pytest.fixture(autouse=True)
def _no_queued_jobs() -> Any:
    yield
    celery_app.control.purge()


def answer_of(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def processed(operation_id: str) -> None:
    """Runs the pipeline job here, as the worker would, in a thread that then gives back its connection."""
    try:
        run_operation(operation_id)
    finally:
        connections.close_all()


async def save_search_and_list(session: Any, document_id: str) -> tuple[Any, Any, Any]:
    """The new user's first steps: list the tools, save a document, let it be processed, recall it and the
    to-do it holds."""
    tools = await session.list_tools()
    assert {"save_memory", "search_memory", "list_open_commitments"} <= {tool.name for tool in tools.tools}
    document = {"id": document_id, "title": "Preferences", "content": TEXT, "timestamp": "2026-04-22T09:00:00Z"}
    receipt = answer_of(await session.call_tool("save_memory", {"document": document}))
    await anyio.to_thread.run_sync(processed, receipt["operationId"])
    found = answer_of(await session.call_tool("search_memory", {"query": "oat milk coffee"}))
    candidates = answer_of(await session.call_tool("list_commitments", {"provenance": "candidate"}))
    return receipt, found, candidates


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_the_sdk_client_saves_searches_and_lists_like_rest(
    mcp_service: McpService, mcp_owner: Persona, transport: str
) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        async with sdk_session(mcp_service.url, mcp_owner, transport) as session:
            return await save_search_and_list(session, f"prefs-{transport}")

    receipt, found, candidates = anyio.run(scenario)
    assert receipt["status"] == "queued"
    assert "oat milk" in found["searchResults"][0]["text"].lower()
    assert found["searchResults"][0]["evidence"][0]["sourceId"]
    same = rest(mcp_service, mcp_owner, "/query/search", {"query": "oat milk coffee"})
    assert found["searchResults"] == same["searchResults"]
    # A to-do in a saved document waits for the user's confirmation: a candidate, not open work yet.
    assert candidates == rest(mcp_service, mcp_owner, "/commitments/list", {"provenance": "candidate"})
    assert [item["label"] for item in candidates["commitments"]] == ["Send the budget to Marcel"]
    assert rest(mcp_service, mcp_owner, "/commitments/open")["commitments"] == []


def test_mcp_keeps_working_for_one_client_across_a_server_restart(mcp_service: McpService, mcp_owner: Persona) -> None:
    async def scenario() -> tuple[Any, Any]:
        async with sdk_session(mcp_service.url, mcp_owner) as session:
            before = answer_of(await session.call_tool("memory_save", {"key": "k", "value": "before"}))
            await anyio.to_thread.run_sync(mcp_service.restart)
            after = answer_of(await session.call_tool("memory_get", {"key": "k"}))
            return before, after

    before, after = anyio.run(scenario)
    assert before["verified_persisted"] is True
    assert after["memory"]["id"] == before["id"]


class OpenSse:
    """An SSE stream held open, with the path of its endpoint event. The line iterator is kept: when it is
    closed (leaving a `for` loop, or garbage-collected) httpx closes the stream and the session ends."""

    def __init__(self, client: httpx.Client, url: str, **headers: str) -> None:
        self.stream = client.stream("GET", url, headers={"Accept": "text/event-stream", **headers})
        response = self.stream.__enter__()
        assert response.status_code == 200, response.read()
        self.lines = response.iter_lines()
        while not (line := next(self.lines)).startswith("data: "):
            pass
        self.endpoint = line.removeprefix("data: ")

    def close(self) -> None:
        self.stream.__exit__(None, None, None)


def test_an_sse_session_is_bound_to_the_token_that_opened_it(
    mcp_service: McpService, mcp_owner: Persona, mcp_other: Persona
) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}
    with httpx.Client(base_url=mcp_service.url, timeout=30) as client:
        sse = OpenSse(client, "/sse", Authorization=f"Bearer {mcp_owner.secret}")
        endpoint = sse.endpoint
        try:
            assert re.fullmatch(r"/messages/\?session_id=[0-9a-f]{32}", endpoint), endpoint
            intruder = client.post(endpoint, json=message, headers=headers_of(mcp_other))
            assert intruder.status_code == 404
            anonymous = client.post(endpoint, json=message, headers={"Content-Type": "application/json"})
            assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "AUTH_REQUIRED"
            owner = client.post(endpoint, json=message, headers=headers_of(mcp_owner))
            assert owner.status_code == 202
        finally:
            sse.close()


def test_sse_with_a_query_token_gets_an_endpoint_that_carries_it(
    mcp_service: McpService, mcp_owner: Persona, transactional_db: None, alice: User
) -> None:
    with httpx.Client(base_url=mcp_service.url, timeout=30) as client:
        sse = OpenSse(client, f"/sse?token={mcp_owner.secret}")
        endpoint = sse.endpoint
        try:
            assert endpoint.endswith(f"&token={mcp_owner.secret}")
            posted = client.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert posted.status_code == 202
        finally:
            sse.close()
        header_only = mcp_persona(alice, "header-only")  # allow_query_token is off
        refused = client.get(f"/sse?token={header_only.secret}")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "QUERY_TOKEN_NOT_ALLOWED"

    async def scenario() -> Any:  # the SDK client, which follows the endpoint event without any header
        from mcp import ClientSession
        from mcp.client.sse import sse_client

        url = f"{mcp_service.url}/sse?token={mcp_owner.secret}"
        async with sse_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return answer_of(await session.call_tool("memory_save", {"key": "q", "value": "via query token"}))

    assert anyio.run(scenario)["verified_persisted"] is True


def test_a_configured_hostname_is_accepted_and_a_foreign_host_or_origin_is_not(
    mcp_service: McpService, mcp_owner: Persona
) -> None:
    real = rpc(mcp_service, mcp_owner, "tools/list", Host=REAL_HOSTNAME)
    assert real.status_code == 200 and real.json()["result"]["tools"]
    with_port = rpc(
        mcp_service, mcp_owner, "tools/list", Host=f"{REAL_HOSTNAME}:8443", Origin=f"https://{REAL_HOSTNAME}"
    )
    assert with_port.status_code == 200
    assert rpc(mcp_service, mcp_owner, "tools/list", Host="evil.example").status_code == 421
    assert rpc(mcp_service, mcp_owner, "tools/list", Origin="https://evil.example").status_code == 403
    sse = httpx.get(f"{mcp_service.url}/sse", headers={**headers_of(mcp_owner), "Host": "evil.example"}, timeout=30)
    assert sse.status_code == 421


def test_stdio_serves_the_same_tools_through_the_sdk_stdio_client(mcp_owner: Persona) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = child_env(settings.DATABASES["default"]["NAME"], MEMORY_TOKEN=mcp_owner.secret)
    server = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp_stdio"], cwd=str(ROOT), env=env)

    async def scenario() -> tuple[list[str], Any, Any]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            saved = answer_of(await session.call_tool("memory_save", {"key": "stdio", "value": "hello"}))
            refused = await session.call_tool("delete_node", {"nodeId": "node_missing"})
            return names, saved, refused

    names, saved, refused = anyio.run(scenario)
    assert len(names) == 56 and "search_memory" in names and "coord_health" in names
    assert saved["verified_persisted"] is True
    assert refused.is_error
    assert json.loads(refused.content[0].text)["error"]["code"] == "VALIDATION_ERROR"  # confirm: true missing


def test_stdio_refuses_to_start_without_a_usable_token(mcp_owner: Persona) -> None:
    import subprocess

    env = child_env(settings.DATABASES["default"]["NAME"], MEMORY_TOKEN="mem_" + "x" * 40)
    started = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert started.returncode != 0
    assert "TOKEN_INVALID" in started.stderr

"""How the drill talks to the service: REST with a bearer token, the MCP SDK client over Streamable HTTP, and the
web UI's sign-in form (for the token page)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import httpx


class DrillFailure(AssertionError):
    """A check did not hold; the message says what was seen."""


def post(url: str, path: str, secret: str, body: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.post(f"{url}{path}", json=body or {}, headers={"Authorization": f"Bearer {secret}"}, timeout=60)


def answer(url: str, path: str, secret: str, body: dict[str, Any] | None = None) -> Any:
    """The JSON of a 2xx answer; anything else fails the check with the error the service gave."""
    response = post(url, path, secret, body)
    if response.status_code >= 300:
        raise DrillFailure(f"POST {url}{path} answered {response.status_code}: {response.text[:300]}")
    return response.json()


def receipt_until(url: str, secret: str, operation_id: str, wanted: set[str], timeout: float = 180) -> Any:
    """Poll a receipt until its status is one of `wanted` (or fail with the last one seen)."""
    deadline = time.monotonic() + timeout
    while True:
        receipt = answer(url, "/source/processing/get", secret, {"operationId": operation_id})
        if receipt["status"] in wanted:
            return receipt
        if time.monotonic() > deadline:
            raise DrillFailure(f"receipt {operation_id} still {receipt['status']} after {timeout:.0f} s: {receipt}")
        time.sleep(0.3)


def mcp_call(url: str, secret: str, tool: str, arguments: dict[str, Any]) -> tuple[list[str], Any]:
    """(tool names, the tool's structured answer) from one session of the official MCP client over /mcp."""
    return asyncio.run(_mcp_call(url, secret, tool, arguments))


async def _mcp_call(url: str, secret: str, tool: str, arguments: dict[str, Any]) -> tuple[list[str], Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import TextContent

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        result = await session.call_tool(tool, arguments)
    if result.is_error:
        raise DrillFailure(f"MCP {tool} on {url} failed: {result.content}")
    text = result.content[0]
    if not isinstance(text, TextContent):
        raise DrillFailure(f"MCP {tool} on {url} answered no text: {result.content}")
    return sorted(t.name for t in tools.tools), json.loads(text.text)


class Browser:
    """A signed-in web UI session (cookies and CSRF) on one web process."""

    def __init__(self, url: str, username: str, password: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=60, follow_redirects=True)
        page = self.http.get("/accounts/login/")
        signed_in = self.http.post(
            "/accounts/login/",
            data={"login": username, "password": password, "csrfmiddlewaretoken": _csrf(page.text)},
            headers={"Referer": f"{url}/accounts/login/"},
        )
        if signed_in.status_code != 200 or "/accounts/login/" in str(signed_in.url):
            raise DrillFailure(f"sign-in on {url} failed: {signed_in.status_code} at {signed_in.url}")

    def submit(self, path: str) -> httpx.Response:
        """GET a confirmation page, then POST its form as a person clicking its button would."""
        page = self.http.get(path)
        if page.status_code != 200:
            raise DrillFailure(f"GET {self.url}{path} answered {page.status_code}")
        return self.http.post(
            path, data={"csrfmiddlewaretoken": _csrf(page.text)}, headers={"Referer": self.url + path}
        )

    def close(self) -> None:
        self.http.close()


def _csrf(html: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    if not found:
        raise DrillFailure("no CSRF token in the page")
    return found.group(1)

"""The request path of a real web process (uvicorn over HTTP, another process than the test's): call telemetry
written off the request path is never lost, and what the server keeps of a token never outlives a change made
by another process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.db.models import Count

from memory.access import Actor, access_for_user
from memory.models import Scope, ToolEvent, ToolProfile, User
from memory.services.partitions import partition_create, partition_deactivate
from memory.services.tokens import token_revoke
from tests.conftest import Persona, error_code, issue
from tests.process import AsgiService, served_on_test_database

# Rows leave the server's queue in batches of BATCH or at shutdown: the interval is longer than any test.
BATCH = 10


@pytest.fixture
def server(transactional_db: None) -> Iterator[AsgiService]:
    with served_on_test_database(
        "request-path-server.log",
        RATE_LIMIT_PER_MINUTE="100000",
        TOOL_EVENTS_DEFERRED="1",
        TOOL_EVENTS_BATCH=str(BATCH),
        TOOL_EVENTS_FLUSH_MS="600000",
    ) as service:
        yield service


def _persona(user: User) -> Persona:
    return issue(user, "mcp-and-rest", scopes=Scope.values, profile=ToolProfile.FULL)


def _rest(server: AsgiService, persona: Persona, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body or {}, headers=persona.headers, timeout=60)


def _tool(server: AsgiService, persona: Persona, name: str, arguments: dict[str, Any] | None = None) -> httpx.Response:
    params = {"name": name, "arguments": arguments or {}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {**persona.headers, "Accept": "application/json, text/event-stream"}
    return httpx.post(f"{server.url}/mcp", json=message, headers=headers, timeout=60)


def _rows(persona: Persona) -> int:
    return ToolEvent.objects.filter(token=persona.token).count()


def test_every_call_of_a_burst_has_its_event_row_after_a_graceful_shutdown(server: AsgiService, alice: User) -> None:
    persona = _persona(alice)
    rest_calls, mcp_calls = 23, 4
    for _ in range(rest_calls):
        assert _rest(server, persona, "/whoami").status_code == 200
    for _ in range(mcp_calls):
        answer = _tool(server, persona, "read_scratchpad")
        assert answer.status_code == 200 and not answer.json()["result"].get("isError"), answer.text
    deadline = time.monotonic() + 60
    while _rows(persona) < 2 * BATCH:  # full batches are written while the server runs
        assert time.monotonic() < deadline, f"only {_rows(persona)} rows written"
        time.sleep(0.1)
    server.stop()  # SIGTERM: the lifespan's shutdown writes what is still queued
    by_surface = dict(ToolEvent.objects.filter(token=persona.token).values_list("surface").annotate(Count("id")))
    assert by_surface == {"rest": rest_calls, "mcp": mcp_calls}


def test_a_token_the_server_holds_is_refused_after_another_process_revokes_it(server: AsgiService, alice: User) -> None:
    persona = _persona(alice)
    for _ in range(2):  # the server now holds the token, by secret (REST, the MCP gate) and by id (the MCP call)
        assert _rest(server, persona, "/whoami").status_code == 200
        assert _tool(server, persona, "read_scratchpad").status_code == 200
    assert persona.token is not None
    token_revoke(actor=Actor.system(), token=persona.token)
    assert error_code(_rest(server, persona, "/whoami")) == "TOKEN_REVOKED"
    refused = _tool(server, persona, "read_scratchpad")
    assert refused.status_code == 401 and error_code(refused) == "TOKEN_REVOKED"


def test_a_user_and_a_partition_changed_elsewhere_count_on_the_servers_next_call(
    server: AsgiService, alice: User
) -> None:
    persona = _persona(alice)
    partition_create(access=access_for_user(user=alice), key="project:apollo", label="Apollo")
    apollo = {"content": "plan", "partitionKey": "project:apollo"}
    assert _rest(server, persona, "/scratchpad/write", apollo).status_code == 200
    partition_deactivate(access=access_for_user(user=alice), key="project:apollo")
    assert error_code(_rest(server, persona, "/scratchpad/write", apollo)) == "PARTITION_INACTIVE"
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert error_code(_rest(server, persona, "/whoami")) == "TOKEN_INVALID"


def test_the_web_process_serves_errors_streams_cookies_and_bodies_as_before(server: AsgiService, alice: User) -> None:
    """Django behind config.handler's one thread hop: the error shape, a streamed range, cookies, a chunked body."""
    persona = _persona(alice)
    missing = httpx.get(f"{server.url}/no-such-path", timeout=60)
    assert missing.status_code == 404 and error_code(missing) == "NOT_FOUND"
    content = bytes(range(256)) * 64
    put = httpx.put(f"{server.url}/artifact", content=content, headers={**persona.headers,
                    "Content-Type": "application/octet-stream"}, timeout=60)  # fmt: skip
    assert put.status_code in (200, 201), put.text
    href = put.json()["href"]
    ranged = httpx.get(f"{server.url}{href}", headers={**persona.headers, "Range": "bytes=100-4195"}, timeout=60)
    assert ranged.status_code == 206 and ranged.content == content[100:4196]
    assert httpx.get(f"{server.url}{href}", headers=persona.headers, timeout=60).content == content
    login = httpx.get(f"{server.url}/accounts/login/", timeout=60)
    assert login.status_code == 200 and "csrftoken" in login.cookies
    chunked = httpx.post(f"{server.url}/whoami", content=iter([b"{", b"}"]),
                         headers={**persona.headers, "Content-Type": "application/json"}, timeout=60)  # fmt: skip
    assert chunked.status_code == 200 and chunked.json()["userId"] == alice.external_id

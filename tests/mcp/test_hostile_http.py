"""Hostile input over real HTTP (uvicorn on loopback): chunked bodies, and what the JSON parser refuses, reached
through MCP as well (issue 12, item 9)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from memory.models import Claim
from tests.conftest import Persona, error_code
from tests.mcp.conftest import McpService, call, headers_of

pytestmark = pytest.mark.django_db(transaction=True)

TWO_MB = 2 * 1024 * 1024  # the server's MAX_JSON_BODY_BYTES (the default)


def chunks(body: bytes, size: int = 1000) -> Iterator[bytes]:
    """A generator body: httpx sends it with Transfer-Encoding: chunked and no Content-Length."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def post_chunked(service: McpService, persona: Persona, path: str, body: bytes) -> httpx.Response:
    headers = {k: v for k, v in headers_of(persona).items() if k != "Accept"}
    return httpx.post(f"{service.url}{path}", content=chunks(body), headers=headers, timeout=60)


def test_a_chunked_json_body_is_read(mcp_service: McpService, mcp_owner: Persona) -> None:
    response = post_chunked(mcp_service, mcp_owner, "/memory/save", b'{"key": "chunked", "value": "arrived whole"}')

    assert response.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in response.request.headers
    assert response.status_code == 200, response.text
    assert Claim.objects.get(key="chunked").value == "arrived whole"


def test_an_empty_chunked_body_means_an_empty_object(mcp_service: McpService, mcp_owner: Persona) -> None:
    response = post_chunked(mcp_service, mcp_owner, "/partitions/list", b"")

    assert response.status_code == 200, response.text


def test_a_post_without_body_or_content_type_is_an_empty_object(mcp_service: McpService, mcp_owner: Persona) -> None:
    """`curl -X POST -H "Authorization: …" …/whoami`, as the README and the first-start banner show it: no
    Content-Length, no Transfer-Encoding, no Content-Type (httpx would add a length, so the bytes are written)."""
    request = (
        f"POST /whoami HTTP/1.1\r\nHost: 127.0.0.1:{mcp_service.port}\r\n"
        f"Authorization: Bearer {mcp_owner.secret}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", mcp_service.port), timeout=60) as connection:
        connection.sendall(request.encode())
        answer = b"".join(iter(lambda: connection.recv(65536), b""))

    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]


def test_a_chunked_body_over_the_cap_is_payload_too_large(mcp_service: McpService, mcp_owner: Persona) -> None:
    body = b'{"key": "big", "value": "' + b"x" * TWO_MB + b'"}'
    response = post_chunked(mcp_service, mcp_owner, "/memory/save", body)

    assert response.status_code == 413, response.text
    assert error_code(response) == "PAYLOAD_TOO_LARGE"
    assert response.json()["error"]["details"] == {"maxBytes": TWO_MB}
    assert not Claim.objects.filter(key="big").exists()


def test_a_lone_surrogate_in_a_tool_call_never_reaches_the_database(
    mcp_service: McpService, mcp_owner: Persona
) -> None:
    """The SDK's JSON-RPC parser refuses it before any tool runs (a guard: this held before issue 12)."""
    # Written escaped, as a client would send it: httpx itself cannot encode a lone surrogate.
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "memory_save", "arguments": {"key": "k", "value": "bad \\ud800 text"}}}  # fmt: skip
    raw = json.dumps(message).replace("\\\\ud800", "\\ud800").encode()
    response = httpx.post(f"{mcp_service.url}/mcp", content=raw, headers=headers_of(mcp_owner), timeout=60)

    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == -32700  # JSON-RPC parse error
    assert not Claim.objects.filter(key="k").exists()


def test_a_malformed_digest_over_mcp_is_a_validation_error(mcp_service: McpService, mcp_owner: Persona) -> None:
    answer = call(mcp_service, mcp_owner, "artifact_get", {"sha256": "a" * 63 + "\x00"})

    assert answer.is_error
    assert answer.code == "VALIDATION_ERROR"


def test_a_tool_call_nested_past_the_depth_limit_is_a_validation_error(
    mcp_service: McpService, mcp_owner: Persona
) -> None:
    value: object = "bottom"
    for _ in range(70):  # past MAX_JSON_DEPTH (64), within what the SDK's JSON-RPC parser reads
        value = [value]
    answer = call(mcp_service, mcp_owner, "memory_save", {"key": "deep", "value": value})

    assert (answer.is_error, answer.code) == (True, "VALIDATION_ERROR")
    assert answer.payload["error"]["details"]["maxDepth"] == 64
    assert not Claim.objects.filter(key="deep").exists()

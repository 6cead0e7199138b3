"""Transport-level refusals of the MCP endpoints in the one error shape (SPEC §4).

Before a POST reaches the SDK its content type must be JSON and its body at most MCP_MAX_BODY_BYTES: the size
is checked against Content-Length and again while reading (a chunked body declares none), and the body read
here is what the SDK gets. The SDK's own HTTP refusals (406 when the client accepts no JSON) are rewritten
into the error shape; its JSON-RPC errors (parse errors and the like) stay JSON-RPC, as clients expect.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from memory.errors import ERROR_KINDS, error_body

Scope = dict[str, Any]
_SHAPED = {406: "NOT_ACCEPTABLE", 413: "PAYLOAD_TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE"}
_DRAIN_FACTOR = 8  # after refusing a streamed body, read (and drop) this many times the cap so the client sees it


async def refuse(send: Any, code: str, message: str, details: dict[str, Any] | None = None) -> None:
    body = json.dumps(error_body(code, message, details)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if ERROR_KINDS[code].status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="memory"'))
    if code == "SERVICE_UNAVAILABLE":
        headers.append((b"retry-after", b"5"))
    await send({"type": "http.response.start", "status": ERROR_KINDS[code].status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str:
    return next((value.decode("latin-1") for key, value in scope.get("headers", []) if key.lower() == name), "")


async def checked_post(scope: Scope, receive: Any, send: Any) -> tuple[bytes, Any] | None:
    """For a POST: refuse a non-JSON content type or an oversized body (None: answered already); otherwise the
    body and a `receive` that hands it to the SDK."""
    media_type = _header(scope, b"content-type").split(";")[0].strip().lower()
    if media_type != "application/json":
        await refuse(send, "UNSUPPORTED_MEDIA_TYPE", "MCP messages are sent as 'Content-Type: application/json'.")
        return None
    cap = settings.MCP_MAX_BODY_BYTES
    declared = _header(scope, b"content-length")
    if declared.isdigit() and int(declared) > cap:
        await _too_large(send, cap)
        return None
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if len(body) > cap:
            await _drain(receive, cap * _DRAIN_FACTOR - len(body), more=message.get("more_body", False))
            await _too_large(send, cap)
            return None
        if not message.get("more_body", False):
            break
    return bytes(body), _replaying(bytes(body), receive)


def rpc_method(body: bytes) -> str:
    """The method of a JSON-RPC request sent alone ("" for a batch, a response, a notification without one, or
    text that is no JSON; the SDK answers those)."""
    if b"method" not in body:
        return ""
    try:
        message = json.loads(body)
    except ValueError:
        return ""
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else ""


async def _too_large(send: Any, cap: int) -> None:
    await refuse(send, "PAYLOAD_TOO_LARGE", "The MCP message is too large.", {"maxBytes": cap})


async def _drain(receive: Any, budget: int, *, more: bool) -> None:
    while more and budget > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        budget -= len(message.get("body", b""))
        more = message.get("more_body", False)


def _replaying(body: bytes, receive: Any) -> Any:
    delivered = False

    async def replay() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())

    return replay


def in_error_shape(send: Any) -> Any:
    """Rewrites the SDK's HTTP-level refusals (406, 413, 415) into the error shape, keeping its message."""
    held: dict[str, Any] = {}

    async def rewriting(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message["status"] in _SHAPED:
            held.update(code=_SHAPED[message["status"]], body=b"")
            return
        if held and message["type"] == "http.response.body":
            held["body"] += message.get("body", b"")
            if not message.get("more_body", False):
                await refuse(send, held["code"], _sdk_message(held["body"]))
            return
        await send(message)

    return rewriting


def _sdk_message(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body.decode("utf-8", "replace")[:200] or "The MCP transport refused the request."

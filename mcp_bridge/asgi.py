"""The MCP transports as one ASGI app: stateless Streamable HTTP at /mcp, legacy SSE at GET /sse + POST
/messages/, each behind `TokenGate`.

- `TokenGate` resolves the AccessToken (Bearer, or `?token=` where the token allows it) like REST does, and
  answers 401 in the error shape otherwise. It puts the SDK's `AuthenticatedUser` in `scope["user"]`, so the
  SDK binds an SSE session to the credential that opened it, and the token id in `scope["memory.token"]` for
  the tool gate. For a `?token=` client it rewrites the SSE `endpoint` event to carry the token, since
  clients drop the query string when they follow it.
- Host and Origin are checked by the SDK's transport security, built from ALLOWED_HOSTS and
  CSRF_TRUSTED_ORIGINS, so a configured real hostname works and a foreign one gets 421 (Origin: 403).
- The Streamable HTTP session manager must run exactly once, in one task: `McpTransports.start()` runs it in
  a background task, from the ASGI lifespan or, on servers without one, on the first request.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import parse_qs, quote

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, close_old_connections
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken as SdkAccessToken
from mcp.server.transport_security import TransportSecuritySettings

from mcp_bridge.calls import Checked
from mcp_bridge.refusals import checked_post, in_error_shape, rpc_method
from mcp_bridge.refusals import refuse as _refuse
from mcp_bridge.server import mcp_server
from memory.access import WORKSPACE_HEADER
from memory.connectivity import UNAVAILABLE_MESSAGE, database_reachable, is_unavailable, note_outage, outage_noted
from memory.credentials import bearer_secret
from memory.errors import AuthenticationError
from memory.services.tokens import token_call_for_secret, token_touch

Scope = dict[str, Any]
_ENDPOINT_EVENT = re.compile(rb"(event: endpoint\r?\ndata: [^\r\n]*session_id=[0-9a-f]+)")


def transport_security() -> TransportSecuritySettings:
    """Hosts and origins MCP accepts, from the same settings as the rest of the site."""
    hosts = [host for host in settings.ALLOWED_HOSTS if host != "*"]
    if "*" in settings.ALLOWED_HOSTS:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts = [pattern for host in hosts for pattern in (host, f"{host}:*")]
    origins = [f"{scheme}://{host}{port}" for host in hosts for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts,
        allowed_origins=[*origins, *settings.CSRF_TRUSTED_ORIGINS],
    )


def _presented(scope: Scope) -> tuple[str, bool] | None:
    """(secret, came as ?token=) or None when no credential was sent."""
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}
    authorization = headers.get("authorization", "")
    if authorization:
        return bearer_secret(authorization), False
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if "token" in query:
        return query["token"][0], True
    return None


def _resolve(secret: str, via_query: bool, count_call: bool) -> Checked:
    try:
        token, verdict = token_call_for_secret(secret, via_query=via_query, count_call=count_call)
        token_touch(token)
        return Checked(token, verdict)
    finally:
        close_old_connections()  # a pooled thread: hand back a connection the lookup took (web process)


class TokenGate:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        presented = _presented(scope)
        if presented is None:
            await _refuse(send, "AUTH_REQUIRED", "Authentication credentials were not provided.")
            return
        secret, via_query = presented
        # Only during a noted outage does this need the database (a direct probe): no thread hop otherwise.
        if outage_noted() and not await sync_to_async(database_reachable)():
            await _refuse(send, "SERVICE_UNAVAILABLE", UNAVAILABLE_MESSAGE)
            return
        try:
            # Any thread will do (the token check shares nothing with the call's); the default would queue every
            # request's check behind one shared thread.
            # A tool call is counted in the token's rate window in the same Redis round trip as the token's check,
            # and the call uses this check (memory.checked) instead of asking again.
            counted = scope.get("memory.rpc_method") == "tools/call"
            checked = await sync_to_async(_resolve, thread_sensitive=False)(secret, via_query, counted)
        except AuthenticationError as exc:
            await _refuse(send, exc.code, exc.message)
            return
        except DatabaseError as exc:
            if not is_unavailable(exc):
                raise
            note_outage()
            await _refuse(send, "SERVICE_UNAVAILABLE", UNAVAILABLE_MESSAGE)
            return
        access_scope = dict(scope.get("headers", [])).get(WORKSPACE_HEADER.encode(), b"").decode("latin-1")
        token = checked.token
        sdk_token = SdkAccessToken(token=token.pk, client_id=token.pk, scopes=list(token.scopes), subject=token.pk)
        scope = {
            **scope,
            "user": AuthenticatedUser(sdk_token),
            "memory.token": token.pk,
            "memory.checked": checked,
            "memory.access_scope": access_scope,
        }
        if via_query and scope["path"] == "/sse":
            send = _with_token_in_endpoint(send, secret)
        await self.app(scope, receive, _guarded(send))


def _with_token_in_endpoint(send: Any, secret: str) -> Any:
    """The SSE `endpoint` event with `&token=…`: a query-token client can then post its messages."""
    suffix = b"&token=" + quote(secret, safe="").encode()

    async def rewriting(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and b"event: endpoint" in message.get("body", b""):
            message = {**message, "body": _ENDPOINT_EVENT.sub(lambda match: match.group(1) + suffix, message["body"])}
        await send(message)

    return rewriting


def _guarded(send: Any) -> Any:
    """Drops anything sent after the response ended (the SDK's SSE app can send a second response when a
    client goes away: SDK issue 883), instead of failing the server."""
    state = {"started": False, "ended": False}

    async def guarded(message: dict[str, Any]) -> None:
        if state["ended"] or (message["type"] == "http.response.start" and state["started"]):
            return
        if message["type"] == "http.response.start":
            state["started"] = True
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            state["ended"] = True
        await send(message)

    return guarded


class McpTransports:
    """/mcp, /sse and /messages/ for one process."""

    def __init__(self) -> None:
        security = transport_security()
        self.streamable = mcp_server.streamable_http_app(
            streamable_http_path="/mcp", stateless_http=True, json_response=True, transport_security=security
        )
        self.sse = mcp_server.sse_app(sse_path="/sse", message_path="/messages/", transport_security=security)
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()

    async def start(self) -> None:
        """Run the session manager in a task of its own until stop(); safe to call more than once."""
        if self._task is None:
            self._task = asyncio.create_task(self._serve())
        await self._ready.wait()

    async def _serve(self) -> None:
        async with mcp_server.session_manager.run():
            self._ready.set()
            await self._stop.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._stop.set()
            await self._task

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = scope["path"]
        if path == "/mcp/":
            scope = {**scope, "path": "/mcp"}
        if scope.get("method") == "POST":
            posted = await checked_post(scope, receive, send)
            if posted is None:
                return
            body, receive = posted
            scope = {**scope, "memory.rpc_method": rpc_method(body)}
        send = in_error_shape(send)
        if path.startswith("/mcp"):
            await self.start()
            await TokenGate(self.streamable)(scope, receive, send)
        else:
            await TokenGate(self.sse)(scope, receive, send)

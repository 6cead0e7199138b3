"""One MCP tool call, whatever the transport: the token, the profile, the arguments, the service, the answer.

A tool bound to a REST endpoint runs exactly that endpoint's request serializer and `handle()`, so its answer
is the REST answer for the same token and the same body. MCP-only tools run a service on arguments their own
serializer validated. Every failure is the one error shape (SPEC §4), returned as a tool error; every call
records a ToolEvent with no content.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import close_old_connections
from rest_framework.utils.encoders import JSONEncoder

from mcp_bridge.catalog import ToolSpec, tools_for_profile
from memory.access import Access, access_for_token, workspace_requested
from memory.api.errors import describe_exception
from memory.api.parsers import refuse_hostile_json
from memory.api.throttling import token_call_wait
from memory.connectivity import is_disconnect, probe, reconnect, replay_safe
from memory.credentials import Gate
from memory.errors import ERROR_KINDS, ServiceError, ValidationFailed, error_body
from memory.models import AccessToken, ChangeSurface, Scope
from memory.services.telemetry import call_record
from memory.services.tokens import token_call_for_id, token_touch

logger = logging.getLogger("mcp_bridge")


class RateLimited(ServiceError):
    code = "RATE_LIMITED"


@dataclass(frozen=True)
class Checked:
    """A token as the transport checked it for this very HTTP request, and the verdict of its rate window when the
    call was counted in the same round trip (None: not counted yet)."""

    token: AccessToken
    verdict: Gate | None = None


@dataclass(frozen=True)
class Caller:
    """Who is calling: the token resolved by the transport, and the access scope it asked for."""

    token_id: str
    access_scope: str = ""  # the x-memory-access-scope header as sent ("" for stdio: strict unless told)
    checked: Checked | None = None  # the transport's check of this request (HTTP); stdio checks on every call


@dataclass
class Outcome:
    result: Any  # JSON-ready: the answer, or the error shape
    is_error: bool
    error_code: str = ""
    text: str = ""  # `result` as JSON text (UTF-8, unescaped), made once: the tool's text block and its size

    @classmethod
    def of(cls, result: Any, *, is_error: bool = False, error_code: str = "") -> Outcome:
        """The answer as REST renders it (ids, dates and decimals as JSON), and its text."""
        text = json.dumps(result, cls=JSONEncoder, ensure_ascii=False)
        return cls(json.loads(text), is_error=is_error, error_code=error_code, text=text)


def call_tool(spec: ToolSpec, arguments: dict[str, Any], caller: Caller) -> Outcome:
    """Run one tool call to the end; never raises."""
    close_old_connections()
    started = time.perf_counter()
    token: AccessToken | None = None
    access: Access | None = None
    for attempt in (1, 2):
        try:
            # The token as it is now (memory.credentials): one revoked since the session opened stops at once. Over
            # HTTP the transport checked it for this very request (and counted the call): that check is used.
            if attempt == 1 and caller.checked is not None:
                token, verdict = caller.checked.token, caller.checked.verdict
            else:
                token, verdict = token_call_for_id(caller.token_id, count_call=attempt == 1)
                token_touch(token)
            if spec not in tools_for_profile(token.profile):
                raise ServiceError(f"No tool named {spec.name!r} for this token.", code="NOT_FOUND")
            if attempt == 1 and (wait := token_call_wait(token, verdict)) is not None:
                raise RateLimited("Too many requests for this token.", details={"retryAfterSeconds": wait})
            refuse_hostile_json(arguments, max_depth=settings.MAX_JSON_DEPTH)  # as REST's parser does
            data = spec.validated(arguments)
            if spec.destructive and data.get("dryRun") is not True:  # a preview changes nothing
                _require_confirmation(token, data)
            data.pop("confirm", None)
            access = access_for_token(
                token=token,
                user_id=data.pop("userId", None),
                partition_key=data.pop("partitionKey", None),
                workspace=workspace_requested(caller.access_scope),
                surface=ChangeSurface.MCP,
            )
            outcome = Outcome.of(spec.run(access, data))
        except Exception as exc:  # every failure leaves in the error shape
            # Transparent reconnect (seeds/004): a read, or a write with an eventId, runs once more on a fresh
            # connection after a genuine disconnect.
            safe = spec.read_only or replay_safe(spec.name, arguments)
            if attempt == 1 and is_disconnect(exc) and safe and probe():
                reconnect()
                continue
            code, message, details = describe_exception(exc, {"view": spec})
            outcome = Outcome.of(error_body(code, message, details), is_error=True, error_code=code)
        break
    _record(spec, token, access, outcome, arguments, started)
    close_old_connections()
    return outcome


def _require_confirmation(token: AccessToken, data: dict[str, Any]) -> None:
    """Destructive tools need a token with `edit` and an explicit `confirm: true` in the call."""
    if Scope.EDIT not in token.scopes:
        raise ServiceError(
            "This tool changes or erases memory and needs a token with the 'edit' scope.",
            code="SCOPE_REQUIRED",
            details={"requiredScope": Scope.EDIT},
        )
    if data.pop("confirm", False) is not True:
        raise ValidationFailed(
            "This tool changes or erases memory: ask the user, then call it again with confirm: true.",
            details={"confirm": ["Must be true."]},
        )


def _record(
    spec: ToolSpec,
    token: AccessToken | None,
    access: Access | None,
    outcome: Outcome,
    arguments: dict[str, Any],
    started: float,
) -> None:
    call_record(
        surface="mcp",
        tool=spec.name,
        token=token,
        access=access,
        status=ERROR_KINDS[outcome.error_code].status if outcome.is_error else 200,
        error_code=outcome.error_code,
        started=started,
        request_bytes=len(json.dumps(arguments, cls=JSONEncoder)),
        response_bytes=len(outcome.text.encode()),
    )

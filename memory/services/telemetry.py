"""ToolEvents: one row per REST or MCP call (what, by which token, how it ended), never any content."""

from __future__ import annotations

import logging

from memory.connectivity import outage_noted
from memory.errors import ERROR_KINDS
from memory.models import AccessToken, ToolEvent, User

logger = logging.getLogger("memory.telemetry")


def outcome_for_status(status: int) -> str:
    if status >= 500:
        return ToolEvent.Outcome.SERVER_ERROR
    if status >= 400:
        return ToolEvent.Outcome.CLIENT_ERROR
    return ToolEvent.Outcome.OK


def tool_event_record(
    *,
    owner: User | None,
    token: AccessToken | None,
    surface: str,
    tool: str,
    partition_key: str,
    status: int,
    error_code: str,
    duration_ms: int,
    request_bytes: int,
    response_bytes: int,
) -> None:
    """Records the call; a failure here is logged, never raised: telemetry must not fail a call."""
    if outage_noted():  # the database is away: do not make the answer wait on the pool for a telemetry row
        return
    try:
        ToolEvent.objects.create(
            owner=owner,
            token=token,
            surface=surface,
            tool=tool,
            partition_key=partition_key,
            status_code=status,
            outcome=outcome_for_status(status),
            error_code=error_code if error_code in ERROR_KINDS else "",
            duration_ms=duration_ms,
            request_bytes=request_bytes,
            response_bytes=response_bytes,
        )
    except Exception:
        logger.exception("tool_event.write_failed", extra={"tool": tool, "surface": surface})

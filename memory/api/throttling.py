"""Per-token rate limiting on Redis: a sliding window of the last minute's calls per token (per client IP
without one), counted by one Lua script in memory.credentials; usually in the round trip that also checked the
token (the verdict then waits on the request)."""

from __future__ import annotations

import math
from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from memory.credentials import Gate, gate, rate_for, window_key
from memory.models import AccessToken


class TokenRateThrottle(BaseThrottle):
    _wait: float = 0.0

    def allow_request(self, request: Request, view: Any) -> bool:
        token = request.auth if isinstance(request.auth, AccessToken) else None
        counted: Gate | None = getattr(request, "rate_verdict", None) if token is not None else None
        verdict = rate_verdict(token, counted, ident=self.get_ident(request))
        if verdict is None:
            return True  # failing open: an unreachable Redis must not take the API down; /healthz reports it
        self._wait = verdict.wait_s
        return verdict.allowed

    def wait(self) -> float | None:
        return self._wait


def rate_verdict(token: AccessToken | None, counted: Gate | None, *, ident: str = "") -> Gate | None:
    """The rate window's verdict on a call: `counted` when the token's check counted the call in the same round
    trip, else the call counted now; None when Redis is unreachable (the call is not limited)."""
    return counted or gate(window=window_key(token, ident), limit=rate_for(token))


def token_call_wait(token: AccessToken, verdict: Gate | None = None) -> int | None:
    """The same per-token window for a call that is not a DRF request (an MCP tool call): None when the call
    may go ahead, else the seconds to wait. `verdict`: the window already counted with the token's check."""
    verdict = rate_verdict(token, verdict)
    if verdict is None or verdict.allowed:
        return None
    return math.ceil(verdict.wait_s or 1)

"""Per-token rate limiting on the shared Redis cache (one window per token; per client IP without one)."""

from __future__ import annotations

import logging
import math
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from memory.models import AccessToken

logger = logging.getLogger("memory.throttling")


class TokenRateThrottle(SimpleRateThrottle):
    scope = "token"
    rate = "1/min"  # placeholder: the real rate is set per request in allow_request

    def allow_request(self, request: Request, view: Any) -> bool:
        token = request.auth if isinstance(request.auth, AccessToken) else None
        per_minute = (token.rate_limit_per_minute if token else None) or settings.RATE_LIMIT_PER_MINUTE
        self.num_requests, self.duration = per_minute, 60
        try:
            return super().allow_request(request, view)
        except RedisError:
            # Failing open: an unreachable cache must not take the API down; /healthz reports Redis.
            logger.warning("throttle.cache_unavailable")
            return True

    def get_cache_key(self, request: Request, view: Any) -> str:
        if isinstance(request.auth, AccessToken):
            return f"throttle:token:{request.auth.pk}"
        return f"throttle:ip:{self.get_ident(request)}"


def token_call_wait(token: AccessToken) -> int | None:
    """The same per-token window for a call that is not a DRF request (an MCP tool call): None when the call
    may go ahead, else the seconds to wait."""

    class Call:
        auth = token

    throttle = TokenRateThrottle()
    if throttle.allow_request(Call(), None):  # type: ignore[arg-type]
        return None
    return math.ceil(throttle.wait() or 1)

"""What the fast lane (memory.api.lane) learned of a call before it handed the call to Django's path.

Once the lane has checked the token and counted the call in the token's rate window, a second check would count
the call twice. The lane leaves what it learned on the request (never from a header: a client cannot set it), and
Django's path takes it from there: the authentication uses the token (memory.api.authentication), the throttle
the verdict (memory.api.throttling), the call log the lane's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory.credentials import Gate
from memory.models import AccessToken

_ATTRIBUTE = "fast_lane_call"


@dataclass(frozen=True)
class LaneCall:
    token: AccessToken  # checked: usable, and touched
    verdict: Gate | None  # the rate window's verdict on this call; None: Redis unreachable, the call not limited
    started: float  # time.perf_counter() when the lane took the call


def hand_over(request: Any, call: LaneCall) -> None:
    setattr(request, _ATTRIBUTE, call)


def handed_over(request: Any) -> LaneCall | None:
    """The lane's findings on this request (a Django request, or DRF's around it), if it handed the call over."""
    return getattr(request, _ATTRIBUTE, None)

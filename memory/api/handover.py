"""What the fast lane (memory.api.lane) learned of a call before it handed the call to Django's path.

Once the lane has checked the token and counted the call in the token's rate window, a second check would count
the call twice. The lane leaves what it learned on the request (never from a header: a client cannot set it), and
Django's path takes it from there: the authentication uses the token and touches it if the lane could not
(memory.api.authentication), the throttle the count already made (memory.api.throttling), the endpoint the
Access and the failure the lane met, answered as if it had met it itself (memory.api.base), and the call log the
lane's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory.access import Access
from memory.credentials import Gate
from memory.models import AccessToken

_ATTRIBUTE = "fast_lane_call"


@dataclass(frozen=True)
class LaneCall:
    token: AccessToken  # checked: usable
    counted: (
        Gate | None
    )  # the rate window's verdict on this call; None: nothing counted (Redis unreachable, or not yet)
    touched: bool  # its last use written (token_touch); False: the write failed, Django's path makes it
    started: float  # time.perf_counter() when the lane took the call
    access: Access | None = None  # built, when the failure came after
    failure: Exception | None = None  # what the Access, the service or the answer raised in the lane


def hand_over(request: Any, call: LaneCall) -> None:
    setattr(request, _ATTRIBUTE, call)


def handed_over(request: Any) -> LaneCall | None:
    """The lane's findings on this request (a Django request, or DRF's around it), if it handed the call over."""
    return getattr(request, _ATTRIBUTE, None)

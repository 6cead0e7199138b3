"""What the fast lane (memory.api.lane) learned of a call before it handed the call to Django's path.

Once the lane has checked the token and counted the call in the token's rate window, a second check would count
the call twice. The lane leaves what it learned on the request (never from a header: a client cannot set it), and
Django's path takes it from there: the authentication uses the token and touches it if the lane could not
(memory.api.authentication), the throttle the count already made (memory.api.throttling), the endpoint the
Access, and the call log the lane's start. A failure the lane met is raised once by the step of Django's path where
it would have happened (the token's check or touch: the authentication; the Access, the service or the answer:
`Endpoint.respond`), so DRF answers it as its own: the one error shape, a dropped connection replaced and the call
run once more, an outage answered 503.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from memory.access import Access
from memory.credentials import Gate
from memory.models import AccessToken

_ATTRIBUTE = "fast_lane_call"


@dataclass(frozen=True)
class LaneCall:
    token: AccessToken | None  # checked: usable; None: the check itself failed (`failure`)
    counted: Gate | None  # the rate window's verdict on this call; None: not counted (Redis unreachable, or not yet)
    touched: bool  # its last use written (token_touch); False: not yet, Django's path writes it
    started: float  # time.perf_counter() when the lane took the call
    access: Access | None = None  # built, when the failure came after
    failure: Exception | None = None  # what the lane met, for Django's path to raise once


def hand_over(request: Any, call: LaneCall) -> None:
    setattr(_django(request), _ATTRIBUTE, call)


def handed_over(request: Any) -> LaneCall | None:
    """The lane's findings on this request (a Django request, or DRF's around it), if it handed the call over."""
    return getattr(_django(request), _ATTRIBUTE, None)


def failure_taken(request: Any) -> Exception | None:
    """The failure the lane met, once: a second attempt of the same step (after a reconnect) runs as usual."""
    handed = handed_over(request)
    if handed is None or handed.failure is None:
        return None
    hand_over(request, replace(handed, failure=None))
    return handed.failure


def _django(request: Any) -> Any:
    return getattr(request, "_request", request)  # DRF's Request wraps Django's

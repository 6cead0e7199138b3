"""The person's time zone, for every page that shows "today" or buckets by day: the one they chose on a page
(remembered in the session), else the browser's own, which static/js/zone.js keeps in a cookie (there is no
time zone setting per person), else the server's TIME_ZONE until the browser has said."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.http import HttpRequest

COOKIE = "tz"
CHOSEN = "ui.time_zone"  # the session key of a zone the person picked on a page


def person_zone(request: HttpRequest) -> ZoneInfo:
    for name in (str(request.session.get(CHOSEN) or ""), request.COOKIES.get(COOKIE, "")):
        if zone := known_zone(name):
            return zone
    return ZoneInfo(settings.TIME_ZONE)


def zone_chosen(request: HttpRequest) -> bool:
    return known_zone(str(request.session.get(CHOSEN) or "")) is not None


def choose_zone(request: HttpRequest, name: str) -> ZoneInfo | None:
    """Remember the zone a person picked (for every page), when it is one."""
    zone = known_zone(name)
    if zone is not None:
        request.session[CHOSEN] = zone.key
    return zone


def known_zone(name: str) -> ZoneInfo | None:
    if not name or len(name) > 64:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):  # unknown, or not a zone name at all ("../x")
        return None

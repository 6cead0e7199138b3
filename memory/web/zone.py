"""The person's time zone, for pages that show "today": the browser's own, which static/js/zone.js keeps in a
cookie (there is no time zone setting per person); the server's TIME_ZONE until the browser has said."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.http import HttpRequest

COOKIE = "tz"


def person_zone(request: HttpRequest) -> ZoneInfo:
    name = request.COOKIES.get(COOKIE, "")
    if name and len(name) <= 64:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):  # unknown, or not a zone name at all ("../x")
            pass
    return ZoneInfo(settings.TIME_ZONE)

"""Request field validators shared by every app's endpoints."""

from __future__ import annotations

from datetime import date, datetime

from rest_framework import serializers

from memory.moments import FIRST_YEAR, LAST_YEAR, is_plausible


def plausible_time(value: date | datetime) -> None:
    """Refuse times outside the accepted calendar range (memory.moments), for dates and datetimes alike."""
    if not is_plausible(value):
        raise serializers.ValidationError(f"Times from {FIRST_YEAR} to {LAST_YEAR} are accepted.")

"""Shared lookups for the token commands."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db.models import Q

from memory.models import AccessToken, User


def user_by_name(name: str) -> User:
    user = User.objects.filter(Q(username=name) | Q(external_id=name)).first()
    if user is None:
        raise CommandError(f"No user named {name!r}.")
    return user


def token_by_reference(reference: str) -> AccessToken:
    """A token by id (tok_…) or by its displayed prefix (mem_…)."""
    matches = list(AccessToken.objects.filter(Q(pk=reference) | Q(prefix=reference[:12])).select_related("owner")[:2])
    if not matches:
        raise CommandError(f"No token {reference!r} (give its id or prefix).")
    if len(matches) > 1:
        raise CommandError(f"{reference!r} matches several tokens; give the token id.")
    return matches[0]

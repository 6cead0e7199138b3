"""Signing in while this process leaves Redis alone (a call it did not answer a moment ago: config.cache.redis_away,
as with Redis down): allauth's login rate limit lives in the cache, and the sign-in must not turn into a 500."""

from __future__ import annotations

import pytest
from django.test import Client

from config import cache as shared
from memory.models import User

pytestmark = pytest.mark.django_db


def test_a_person_signs_in_while_redis_is_away(client: Client, alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    alice.set_password("correct horse battery")
    alice.save()
    monkeypatch.setattr(shared, "_away_until", 0.0)
    shared.noted_away()
    response = client.post("/accounts/login/", {"login": alice.username, "password": "correct horse battery"})
    assert response.status_code == 302, response.content[:500]
    assert client.session["_auth_user_id"] == str(alice.pk)
    client.logout()
    wrong = client.post("/accounts/login/", {"login": alice.username, "password": "wrong"})
    assert wrong.status_code == 200  # the form again, with its error

"""Token authentication on the REST API: Bearer, query tokens, revocation, rotation, expiry."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.access import Actor
from memory.models import AccessToken
from memory.services.tokens import token_revoke, token_rotate
from tests.conftest import Api, Persona, error_code, issue, redis_left_alone

pytestmark = pytest.mark.django_db


def test_owner_token_reaches_whoami(api: Api, owner: Persona) -> None:
    response = api.post("/whoami", owner)
    assert response.status_code == 200
    body = response.json()
    assert body["userId"] == "alice"
    assert body["token"]["prefix"] == owner.secret[:12]
    assert body["access"] == {
        "mode": "strict",
        "partitionKey": "memory:personal",
        "readPartitionKeys": ["memory:personal"],
    }


def test_missing_credentials_get_auth_required(api: Api) -> None:
    response = api.post("/whoami", None)
    assert response.status_code == 401
    assert error_code(response) == "AUTH_REQUIRED"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_outsider_secret_gets_token_invalid(api: Api, outsider: Persona) -> None:
    response = api.post("/whoami", outsider)
    assert response.status_code == 401
    assert error_code(response) == "TOKEN_INVALID"


@pytest.mark.parametrize("header", ["Token abc", "Bearer", "Bearer ", "Basic YWxpY2U6cHc="])
def test_malformed_authorization_header_is_rejected(api: Api, header: str) -> None:
    response = api.post("/whoami", None, headers={"Authorization": header})
    assert response.status_code == 401
    assert error_code(response) == "TOKEN_INVALID"


def test_revoked_token_gets_token_revoked(api: Api, revoked: Persona) -> None:
    response = api.post("/whoami", revoked)
    assert response.status_code == 401
    assert error_code(response) == "TOKEN_REVOKED"


def test_revocation_takes_effect_on_the_next_request(api: Api, owner: Persona) -> None:
    assert api.post("/whoami", owner).status_code == 200
    assert owner.token is not None
    token_revoke(actor=Actor.system(), token=owner.token)
    response = api.post("/whoami", owner)
    assert response.status_code == 401
    assert error_code(response) == "TOKEN_REVOKED"


def test_rotation_revokes_the_old_secret_and_keeps_the_settings(api: Api, alice) -> None:
    persona = issue(alice, "laptop", scopes=["read"], partition_keys=["memory:personal"], allow_query_token=True)
    assert persona.token is not None
    rotated = token_rotate(actor=Actor.system(), token=persona.token)
    assert error_code(api.post("/whoami", persona)) == "TOKEN_REVOKED"
    fresh = Persona("rotated", alice, rotated.token, rotated.secret)
    body = api.post("/whoami", fresh).json()
    assert body["token"]["scopes"] == ["read"]
    assert body["token"]["partitionKeys"] == ["memory:personal"]
    assert body["token"]["allowQueryToken"] is True
    assert rotated.token.rotated_from_id == persona.token.pk


def test_expired_token_gets_token_expired(api: Api, alice) -> None:
    persona = issue(alice, "old", expires_at=timezone.now() + timedelta(days=1))
    AccessToken.objects.filter(pk=persona.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))  # type: ignore[union-attr]
    response = api.post("/whoami", persona)
    assert response.status_code == 401
    assert error_code(response) == "TOKEN_EXPIRED"


def test_token_of_a_deactivated_user_is_refused(api: Api, owner: Persona, alice) -> None:
    alice.is_active = False
    alice.save()
    assert error_code(api.post("/whoami", owner)) == "TOKEN_INVALID"


def test_query_token_is_refused_unless_the_token_allows_it(api: Api, owner: Persona) -> None:
    response = api.client.post(f"/whoami?token={owner.secret}", data="{}", content_type="application/json")
    assert response.status_code == 401
    assert error_code(response) == "QUERY_TOKEN_NOT_ALLOWED"


def test_query_token_works_where_allowed(api: Api, alice) -> None:
    persona = issue(alice, "connector", allow_query_token=True)
    response = api.client.post(f"/whoami?token={persona.secret}", data="{}", content_type="application/json")
    assert response.status_code == 200
    assert response.json()["userId"] == "alice"


def test_last_used_is_written_at_most_once_a_minute(api: Api, owner: Persona, monkeypatch: pytest.MonkeyPatch) -> None:
    api.post("/whoami", owner)
    first = AccessToken.objects.get(pk=owner.token.pk).last_used_at  # type: ignore[union-attr]
    assert first is not None
    api.post("/whoami", owner)
    assert AccessToken.objects.get(pk=owner.token.pk).last_used_at == first  # type: ignore[union-attr]
    later = first + timedelta(minutes=2)  # the token is kept in this process: the minute passes for it too
    monkeypatch.setattr(timezone, "now", lambda: later)
    api.post("/whoami", owner)
    assert AccessToken.objects.get(pk=owner.token.pk).last_used_at == later  # type: ignore[union-attr]


def test_secret_is_stored_only_as_a_hash(owner: Persona) -> None:
    token = AccessToken.objects.get(pk=owner.token.pk)  # type: ignore[union-attr]
    assert owner.secret not in {token.secret_hash, token.prefix, token.label}
    assert len(token.secret_hash) == 64


def test_while_redis_is_away_a_call_is_not_limited_nor_logged_once_a_call(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The outage is logged once (config.cache: redis.away); the credentials' gate used to add a warning a second."""
    import logging

    from memory import credentials

    redis_left_alone(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="memory.credentials"):
        assert credentials.gate(window="memory:throttle:ip:test", limit=1) is None  # nothing cached trusted, no limit
    assert caplog.records == []

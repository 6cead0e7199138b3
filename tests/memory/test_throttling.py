"""Per-token rate limiting on the Redis cache."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.conftest import Api, error_code, issue

pytestmark = pytest.mark.django_db


def test_a_token_over_its_rate_gets_rate_limited(api: Api, alice) -> None:
    limited = issue(alice, "busy", rate_limit_per_minute=3)
    assert [api.post("/whoami", limited).status_code for _ in range(3)] == [200, 200, 200]
    response = api.post("/whoami", limited)
    assert response.status_code == 429
    assert error_code(response) == "RATE_LIMITED"
    retry_after = int(response["Retry-After"])
    assert 0 < retry_after <= 60
    assert response.json()["error"]["details"]["retryAfterSeconds"] == retry_after


def test_limits_are_counted_per_token(api: Api, alice) -> None:
    first = issue(alice, "first", rate_limit_per_minute=1)
    second = issue(alice, "second", rate_limit_per_minute=1)
    assert api.post("/whoami", first).status_code == 200
    assert api.post("/whoami", first).status_code == 429
    assert api.post("/whoami", second).status_code == 200


def test_the_window_lives_in_redis(api: Api, alice) -> None:
    limited = issue(alice, "busy", rate_limit_per_minute=5)
    api.post("/whoami", limited)
    assert limited.token is not None
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    assert redis.zcard(f"memory:throttle:token:{limited.token.pk}") == 1  # one call in the last minute
    api.post("/whoami", limited)
    assert redis.zcard(f"memory:throttle:token:{limited.token.pk}") == 2
    assert 60 <= redis.ttl(f"memory:throttle:token:{limited.token.pk}") <= 61  # gone a minute after the last call

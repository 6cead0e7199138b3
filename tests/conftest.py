"""Fixtures shared by the whole suite: the embedded servers and the personas (SPEC §4, STYLE.md).

Personas: `owner` (alice, every scope), `other` (bob, a second user with his own memory), `outsider`
(a syntactically valid secret that matches no token), `revoked` (alice's revoked token) and `host`
(a chat host token that may act for alice only).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client

from config import cache as shared_cache
from config.embedded import Runtime, ensure_started
from memory.access import Actor
from memory.connectivity import outage_noted, probe
from memory.models import AccessToken, Scope, Surface, User
from memory.recall.held_vectors import HOLDING
from memory.recall.threads import drained
from memory.services.redis_debts import LEDGER, SETTLING
from memory.services.tokens import token_issue, token_revoke
from tests import sigterm
from tests.factories import UserFactory


def pytest_configure(config: pytest.Config) -> None:
    sigterm.interrupt_on_sigterm()  # a run stopped with SIGTERM tears down and stops its servers (tests/sigterm.py)


@pytest.fixture(scope="session")
def embedded_runtime() -> Runtime:
    """Start the embedded PostgreSQL and Redis for this test run, or reuse running ones."""
    runtime: Runtime = settings.EMBEDDED_RUNTIME
    ensure_started(runtime)
    return runtime


@pytest.fixture(scope="session")
def django_db_modify_db_settings(embedded_runtime: Runtime) -> None:
    """Hooked into pytest-django's database setup so the server is up before the test database is made."""


@pytest.fixture(autouse=True)
def blob_dir(settings: Any, tmp_path: Path) -> Path:
    """Every test keeps its blobs in its own empty directory (the storage is rebuilt on the settings change)."""
    directory = tmp_path / "blobs"
    settings.BLOB_DIR = directory
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(directory)}},
    }
    return directory


def redis_left_alone(monkeypatch: pytest.MonkeyPatch, seconds: float = 60) -> None:
    """From now, this process leaves Redis alone for `seconds` (config.cache.redis_away), as after a call of its that
    Redis did not answer; no watcher (Redis itself answers; the suite's teardown ends the wait)."""
    from config import cache as shared

    monkeypatch.setattr(shared, "AWAY_SECONDS", seconds)
    shared.noted_away()


def owed_settled(timeout: float = 5.0) -> None:
    """Until nothing is owed to Redis by this process (config.redis_retry), `timeout` at most."""
    from config import redis_retry

    deadline = time.monotonic() + timeout
    while redis_retry.owed() and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def _no_redis_ledger() -> Iterator[None]:
    """What this process owes Redis is not written down (memory.services.redis_debts): its thread's own connection
    would commit rows outside a test's transaction. Its tests, and the servers tests start, write them."""
    from config import redis_retry

    held = redis_retry._ledger
    redis_retry._ledger = None
    yield
    redis_retry._ledger = held


@pytest.fixture(autouse=True)
def _clear_cache(embedded_runtime: Runtime, _no_redis_ledger: None) -> Iterator[None]:
    yield  # torn down before the ledger comes back: hearing Redis below settles nothing
    drained("vocabulary")  # a count a search handed to recall's thread writes no keys into the next test
    drained(HOLDING)  # nor does a copy of a reach's vectors it handed on read rows of this one's
    drained("erased-views")  # nor does an erasure's deletion of cached views
    drained("access-bookkeeping")  # nor a search's access count (Redis's command statistics are the server's)
    drained(LEDGER)  # nor a write owed to Redis, written down by its thread (tests/test_redis_debts.py)
    shared_cache.redis_heard()  # a test that found a Redis away (config.cache.redis_away) leaves it to no other
    drained(SETTLING)  # nor the settling that hearing it again started in a test of the ledger
    owed_settled()  # nor what it owes Redis (tried at once now: the suite's Redis answers)
    cache.clear()  # throttle windows must not leak between tests (cache DB only, never the queue)


@pytest.fixture(autouse=True)
def _no_outage_left_behind() -> Iterator[None]:
    yield
    if outage_noted():  # a test that broke the database on purpose: the process must not go on answering 503
        probe()


@dataclass
class Persona:
    name: str
    user: User | None
    token: AccessToken | None
    secret: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}"}


class Api:
    """POSTs JSON through the whole Django stack as a persona would."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def post(
        self,
        path: str,
        persona: Persona | None,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        raw: str | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """`body` is sent as JSON; `raw` is sent as it is (for malformed input)."""
        sent = {**(persona.headers if persona else {}), **(headers or {})}
        payload = raw if raw is not None else json.dumps({} if body is None else body)
        return self.client.generic("POST", path, payload, content_type=content_type, headers=sent)

    def get(self, path: str, persona: Persona | None) -> Any:
        return self.client.generic("GET", path, headers=persona.headers if persona else {})


@pytest.fixture
def api(client: Client) -> Api:
    return Api(client)


def issue(user: User, label: str = "test", **settings_: Any) -> Persona:
    issued = token_issue(actor=Actor.system(), owner=user, label=label, **settings_)
    return Persona(name=label, user=user, token=issued.token, secret=issued.secret)


@pytest.fixture
def admin_client(client: Client) -> Client:
    """The test client signed in as a superuser (the Django admin's pages)."""
    client.force_login(UserFactory.create(username="root", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def alice(db: None) -> User:
    return UserFactory.create(username="alice")


@pytest.fixture
def bob(db: None) -> User:
    return UserFactory.create(username="bob")


@pytest.fixture
def owner(alice: User) -> Persona:
    return issue(alice, "owner", scopes=Scope.values)


@pytest.fixture
def other(bob: User) -> Persona:
    return issue(bob, "other", scopes=Scope.values)


@pytest.fixture
def outsider(db: None) -> Persona:
    return Persona(name="outsider", user=None, token=None, secret="mem_" + "x" * 40)


@pytest.fixture
def revoked(alice: User) -> Persona:
    persona = issue(alice, "revoked", scopes=Scope.values)
    assert persona.token is not None
    token_revoke(actor=Actor.system(), token=persona.token)
    return persona


@pytest.fixture
def host(alice: User) -> Persona:
    service = UserFactory.create(username="chat-host")
    return issue(service, "host", scopes=Scope.values, surface=Surface.HOST, acts_for=[alice])


def error_code(response: Any) -> str:
    """The stable code of an error response, after checking the one error shape (SPEC §4)."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "remedy", "details"}, body
    assert body["error"]["message"], body
    assert body["error"]["remedy"], body
    return str(body["error"]["code"])

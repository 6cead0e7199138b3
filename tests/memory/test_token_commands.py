"""issue_token / revoke_token / rotate_token: scripts get the secret and nothing else."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.models import AccessToken
from tests.conftest import Api, Persona, error_code

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_issue_token_prints_only_a_working_secret(api: Api, alice) -> None:
    output = run("issue_token", "--user", "alice", "--label", "laptop")
    secret = output.strip()
    assert output.count("\n") == 1
    assert secret.startswith("mem_")
    response = api.post("/whoami", Persona("cli", alice, None, secret))
    assert response.status_code == 200
    assert response.json()["token"]["label"] == "laptop"


def test_issue_token_applies_every_option(alice, bob) -> None:
    run(
        "issue_token", "--user", "bob", "--label", "host", "--scopes", "read,write,edit", "--surface", "host",
        "--acts-for", "alice", "--partition", "memory:personal", "--profile", "agent", "--allow-query-token",
        "--expires-in-days", "30",
    )  # fmt: skip
    token = AccessToken.objects.get(label="host")
    assert token.owner == bob
    assert token.scopes == ["read", "write", "edit"]
    assert token.partition_keys == ["memory:personal"]
    assert (token.profile, token.surface, token.allow_query_token) == ("agent", "host", True)
    assert list(token.acts_for.all()) == [alice]
    assert token.expires_at is not None


@pytest.mark.parametrize(
    "args",
    [
        ("--user", "nobody", "--label", "x"),
        ("--user", "alice", "--label", "x", "--scopes", "read,admin"),
        ("--user", "alice", "--label", "x", "--surface", "host"),
        ("--user", "alice", "--label", "x", "--partition", "Bad Key"),
    ],
)
def test_issue_token_refuses_bad_input_without_writing(alice, args: tuple[str, ...]) -> None:
    with pytest.raises(CommandError):
        run("issue_token", *args)
    assert not AccessToken.objects.filter(label="x").exists()


def test_revoke_token_by_prefix(api: Api, owner: Persona) -> None:
    assert run("revoke_token", owner.secret[:12]).strip() == owner.token.pk  # type: ignore[union-attr]
    assert error_code(api.post("/whoami", owner)) == "TOKEN_REVOKED"


def test_rotate_token_prints_the_replacement(api: Api, owner: Persona, alice) -> None:
    secret = run("rotate_token", owner.token.pk).strip()  # type: ignore[union-attr]
    assert error_code(api.post("/whoami", owner)) == "TOKEN_REVOKED"
    assert api.post("/whoami", Persona("new", alice, None, secret)).status_code == 200


def test_rotating_a_revoked_token_is_refused(revoked: Persona) -> None:
    with pytest.raises(CommandError):
        run("rotate_token", revoked.token.pk)  # type: ignore[union-attr]


def test_unknown_token_reference_is_refused(db: None) -> None:
    with pytest.raises(CommandError):
        run("revoke_token", "tok_nothing")


@pytest.mark.parametrize("days", ["0", "-1", "-365", "100000000"])
def test_issue_token_refuses_an_expiry_that_is_not_in_the_future(alice, days: str) -> None:
    with pytest.raises(CommandError, match="expires-in-days"):
        run("issue_token", "--user", "alice", "--label", "x", "--expires-in-days", days)
    assert not AccessToken.objects.filter(label="x").exists()


def test_a_token_cannot_be_issued_already_expired(alice) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from memory.access import Actor
    from memory.errors import ValidationFailed
    from memory.services.tokens import token_issue

    with pytest.raises(ValidationFailed) as refused:
        token_issue(actor=Actor.system(), owner=alice, label="x", expires_at=timezone.now() - timedelta(seconds=1))
    assert "expiresAt" in refused.value.details
    assert not AccessToken.objects.filter(label="x").exists()

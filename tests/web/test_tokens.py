"""/ui/tokens/: a person mints, rotates and revokes their own tokens; a secret is shown once, then never again."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from memory.access import Actor
from memory.models import AccessToken
from memory.services.tokens import token_issue
from tests.factories import PartitionFactory, UserFactory
from tests.web.conftest import post_without_csrf, screenshots, sign_in_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SECRET = re.compile(r"mem_[A-Za-z0-9_-]{40}")


def whoami(secret: str) -> tuple[int, str]:
    response = Client().post("/whoami", "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    code = response.json().get("error", {}).get("code", "") if response.status_code != 200 else ""
    return response.status_code, code


def test_create_shows_the_secret_once_with_client_setups_and_it_works(page, live_server) -> None:
    alice = UserFactory.create(username="alice")
    PartitionFactory.create(owner=alice, key="project:apollo", label="Apollo")
    token_issue(actor=Actor.system(), owner=alice, label="Old laptop")
    sign_in_as(page, live_server, alice)
    page.goto(f"{live_server.url}/ui/tokens/")
    assert "Old laptop" in page.inner_text("#tokens")
    screenshots(page, "ui-tokens-list")
    page.get_by_label("Label").fill("Claude Desktop")
    page.get_by_label("Apollo").check()
    page.get_by_label("May travel in the URL").check()
    page.get_by_label("MCP tools").select_option("agent")
    screenshots(page, "ui-tokens-create")
    response = None
    with page.expect_response(lambda r: r.url.endswith("/ui/tokens/") and r.request.method == "POST") as info:
        page.get_by_role("button", name="Create token").click()
    response = info.value
    assert "no-store" in response.headers["cache-control"]
    secret = page.inner_text("#secret").strip()
    assert SECRET.fullmatch(secret)
    mcp_url = f"{live_server.url}/mcp"
    for setup in ("#setup-desktop", "#setup-code", "#setup-cursor", "#setup-claude-ai"):
        text = page.inner_text(setup)
        assert secret in text and mcp_url in text, setup
    assert f"{mcp_url}?token={secret}" in page.inner_text("#setup-claude-ai")
    screenshots(page, "ui-tokens-secret")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.get_by_role("button", name="Copy the Claude Code command").click()
    assert page.evaluate("navigator.clipboard.readText()") == page.inner_text("#setup-code")
    page.get_by_role("button", name="Copy the secret").click()
    assert page.evaluate("navigator.clipboard.readText()").strip() == secret
    token = AccessToken.objects.get(label="Claude Desktop")
    assert (token.owner, token.partition_keys, token.profile, token.surface) == (
        alice,
        ["project:apollo"],
        "agent",
        "mcp",
    )
    assert token.allow_query_token
    assert whoami(secret) == (200, "")
    page.reload()  # re-sends the POST: no second token, no secret
    assert secret not in page.content()
    assert not SECRET.search(page.content())
    assert "shown only once" in page.inner_text(".messages")
    page.goto(f"{live_server.url}/ui/tokens/")
    assert secret not in page.content()
    assert token.prefix in page.inner_text("#tokens")
    assert AccessToken.objects.filter(owner=alice).count() == 2  # the reload created nothing


def test_rotate_shows_a_new_secret_once_and_the_old_one_is_revoked(page, live_server) -> None:
    alice = UserFactory.create(username="alice")
    old = token_issue(actor=Actor.system(), owner=alice, label="Cursor")
    sign_in_as(page, live_server, alice)
    page.goto(f"{live_server.url}/ui/tokens/")
    page.get_by_role("button", name="Rotate Cursor").click()
    page.wait_for_selector("#secret")
    secret = page.inner_text("#secret").strip()
    assert SECRET.fullmatch(secret) and secret != old.secret
    page.reload()  # re-sends the POST: the old token is revoked now, so nothing is rotated or shown
    assert not SECRET.search(page.content())
    assert whoami(old.secret) == (401, "TOKEN_REVOKED")
    assert whoami(secret) == (200, "")
    page.goto(f"{live_server.url}/ui/tokens/")
    assert secret not in page.content()
    assert "revoked" in page.inner_text(f"#token-{old.token.pk}")


def test_revoke_asks_first_then_the_token_is_refused(page, live_server) -> None:
    alice = UserFactory.create(username="alice")
    issued = token_issue(actor=Actor.system(), owner=alice, label="Phone")
    sign_in_as(page, live_server, alice)
    page.goto(f"{live_server.url}/ui/tokens/")
    page.get_by_role("link", name="Revoke Phone").click()
    assert "stops working" in page.inner_text("main")
    assert whoami(issued.secret) == (200, "")  # asking is not revoking
    screenshots(page, "ui-tokens-revoke")
    page.get_by_role("button", name="Revoke token").click()
    page.wait_for_url(f"{live_server.url}/ui/tokens/")
    assert "Revoked" in page.inner_text(".messages")
    assert whoami(issued.secret) == (401, "TOKEN_REVOKED")


def test_another_person_gets_404_and_does_not_see_the_token() -> None:
    alice, bob = UserFactory.create(username="alice"), UserFactory.create(username="bob")
    issued = token_issue(actor=Actor.system(), owner=alice, label="Alice's laptop")
    client = Client()
    client.force_login(bob)
    assert "Alice's laptop" not in client.get("/ui/tokens/").content.decode()
    assert client.get(f"/ui/tokens/{issued.token.pk}/revoke").status_code == 404
    assert client.post(f"/ui/tokens/{issued.token.pk}/revoke").status_code == 404
    assert client.post(f"/ui/tokens/{issued.token.pk}/rotate").status_code == 404
    assert whoami(issued.secret) == (200, "")
    assert AccessToken.objects.filter(owner=alice).count() == 1


def test_signed_out_visitors_are_sent_to_login_and_forms_need_csrf() -> None:
    alice = UserFactory.create(username="alice")
    issued = token_issue(actor=Actor.system(), owner=alice, label="Laptop")
    for path in ("/ui/tokens/", f"/ui/tokens/{issued.token.pk}/revoke"):
        response = Client().get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path
    assert post_without_csrf(alice, "/ui/tokens/", {"label": "x", "scopes": "read", "once": "1"}) == 403
    assert post_without_csrf(alice, f"/ui/tokens/{issued.token.pk}/rotate") == 403
    assert post_without_csrf(alice, f"/ui/tokens/{issued.token.pk}/revoke") == 403
    assert AccessToken.objects.filter(owner=alice).count() == 1
    assert whoami(issued.secret) == (200, "")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"label": "No scopes"}, "Scopes must be a non-empty subset"),
        (
            {"label": "Bob's", "scopes": "read", "partitions": "project:bobs"},
            "Not one of your partitions: project:bobs",
        ),
        ({"label": "Past", "scopes": "read", "expires": "2020-01-01"}, "The expiry must be in the future"),
        ({"label": "Odd", "scopes": "read", "expires": "soon"}, "“soon” is not a date"),
    ],
)
def test_bad_input_says_what_is_wrong_and_creates_nothing(data: dict[str, str], message: str) -> None:
    alice = UserFactory.create(username="alice")
    PartitionFactory.create(owner=UserFactory.create(username="bob"), key="project:bobs")
    client = Client()
    client.force_login(alice)
    response = client.post("/ui/tokens/", {**data, "once": message})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not SECRET.search(response.content.decode())
    assert not AccessToken.objects.exists()


def test_the_auth_remedies_point_at_this_page() -> None:
    response = Client().post("/whoami", "{}", content_type="application/json")
    assert response.status_code == 401
    assert "/ui/tokens/" in response.json()["error"]["remedy"]

"""The signed-in home page lists the person's partitions and tokens; everything else asks to sign in."""

from __future__ import annotations

import pytest

from memory.access import Actor
from memory.services.tokens import token_issue, token_revoke
from tests.factories import PartitionFactory, UserFactory
from tests.web.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"


def sign_in(page, live_server, login: str) -> None:
    page.goto(f"{live_server.url}/ui/")
    assert "/accounts/login/" in page.url
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/ui/")


def test_person_signs_in_with_username_and_sees_partitions_and_tokens(page, live_server) -> None:
    alice = UserFactory.create(username="alice")
    PartitionFactory.create(owner=alice, key="project:apollo", label="Apollo")
    PartitionFactory.create(owner=alice, key="project:old", is_active=False)
    laptop = token_issue(actor=Actor.system(), owner=alice, label="Laptop")
    old = token_issue(actor=Actor.system(), owner=alice, label="Old phone")
    token_revoke(actor=Actor.system(), token=old.token)
    token_issue(actor=Actor.system(), owner=UserFactory.create(username="bob"), label="Bob's token")

    sign_in(page, live_server, "alice")
    partitions = page.inner_text("#partitions")
    assert "memory:personal" in partitions
    assert "project:apollo" in partitions
    assert "inactive" in partitions
    tokens = page.inner_text("#tokens")
    assert "Laptop" in tokens
    assert laptop.token.prefix in tokens
    assert "revoked" in tokens
    assert "Bob's token" not in tokens
    assert laptop.secret not in page.content()
    screenshot(page, "ui-home")


def test_person_signs_in_with_email(page, live_server) -> None:
    UserFactory.create(username="carol", email="carol@example.test")
    sign_in(page, live_server, "carol@example.test")
    assert "Your memory" in page.inner_text("h1")


def test_wrong_password_stays_on_the_login_page(page, live_server) -> None:
    UserFactory.create(username="dave")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=login]", "dave")
    page.fill("input[name=password]", "not the password")
    page.click("button[type=submit]")
    assert "/accounts/login/" in page.url
    assert "not correct" in page.inner_text("body").lower()
    screenshot(page, "login-error")

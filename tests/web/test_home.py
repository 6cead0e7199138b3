"""The signed-in home page lists the person's partitions and tokens; everything else asks to sign in."""

from __future__ import annotations

import pytest

from memory.access import Actor
from memory.services.tokens import token_issue
from tests.factories import PartitionFactory, UserFactory
from tests.web.conftest import post_without_csrf, screenshot, screenshots, sign_in_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"


def sign_in(page, live_server, login: str) -> None:
    page.goto(f"{live_server.url}/ui/")
    assert "/accounts/login/" in page.url
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/ui/")


def test_person_signs_in_with_username_and_lands_on_the_dashboard(page, live_server) -> None:
    """The dashboard replaced the partitions-and-tokens page: partitions are in the header's switcher (and
    listed at the foot of the dashboard), tokens have their own page (/ui/tokens/)."""
    alice = UserFactory.create(username="alice")
    PartitionFactory.create(owner=alice, key="project:apollo", label="Apollo")
    PartitionFactory.create(owner=alice, key="project:old", is_active=False)
    laptop = token_issue(actor=Actor.system(), owner=alice, label="Laptop")

    sign_in(page, live_server, "alice")
    assert "Your memory" in page.inner_text("h1")
    partitions = page.inner_text("#partitions")
    assert "memory:personal" in partitions
    assert "project:apollo" in partitions
    assert "project:old" not in partitions  # inactive
    assert page.get_by_role("link", name="Access tokens").get_attribute("href") == "/ui/tokens/"
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


def test_the_partition_switcher_remembers_the_choice_in_the_session(page, live_server) -> None:
    alice = UserFactory.create(username="alice")
    PartitionFactory.create(owner=alice, key="project:apollo", label="Apollo")
    PartitionFactory.create(owner=alice, key="project:old", label="Old", is_active=False)
    sign_in_as(page, live_server, alice)
    page.goto(f"{live_server.url}/ui/")
    switch = page.get_by_label("Partition")
    assert switch.input_value() == "memory:personal"  # strict, personal by default
    options = page.locator("#partition-switch option").all_inner_texts()
    assert options == ["Personal", "Apollo", "All partitions"]  # inactive partitions are not offered
    with page.expect_navigation():  # the switch posts and comes back; wait for that before moving on
        switch.select_option("project:apollo")
    page.goto(f"{live_server.url}/ui/")
    assert page.get_by_label("Partition").input_value() == "project:apollo"
    with page.expect_navigation():
        page.get_by_label("Partition").select_option(label="All partitions")
    page.goto(f"{live_server.url}/ui/")
    assert page.get_by_label("Partition").input_value() == "*"
    screenshots(page, "ui-header")


def test_the_switcher_refuses_a_partition_that_is_not_the_persons_and_a_post_without_csrf(page, live_server) -> None:
    alice = UserFactory.create(username="alice")
    PartitionFactory.create(owner=UserFactory.create(username="bob"), key="project:bobs")
    sign_in_as(page, live_server, alice)
    page.goto(f"{live_server.url}/ui/")
    with page.expect_navigation():
        page.evaluate(
            "() => { const s = document.querySelector('#partition-switch'); s.add(new Option('x', 'project:bobs'));"
            " s.value = 'project:bobs'; s.form.requestSubmit(); }"
        )
    page.goto(f"{live_server.url}/ui/")
    assert page.get_by_label("Partition").input_value() == "memory:personal"
    assert post_without_csrf(alice, "/ui/partition", {"partition": "*"}) == 403

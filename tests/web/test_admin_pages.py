"""The admin as an admin sees it: a changelist with the product's labels, at 1280 and 390 px."""

from __future__ import annotations

import pytest

from tests.conftest import Api, Persona
from tests.factories import UserFactory
from tests.web.conftest import screenshots, sign_in_as
from tests.web.memories import say

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_entities_changelist_with_the_merge_action(page, live_server, api: Api, owner: Persona) -> None:
    say(api, owner, "I live in Utrecht.", "I work at Acme with Bob.")
    sign_in_as(page, live_server, UserFactory.create(username="root", is_staff=True, is_superuser=True))
    page.goto(f"{live_server.url}/admin/memory/node/")
    assert page.locator("h1").inner_text() == "Select entity to change"
    assert "Merge the selected entities into one (preview first)" in page.inner_text("select[name=action]")
    assert page.locator("#result_list tbody tr").count() >= 2
    screenshots(page, "admin-entities")
    page.goto(f"{live_server.url}/admin/memory/alias/")
    assert page.title() == "Aliases (view only) | Memory admin"
    assert "Memory administration" in page.inner_text("#header")

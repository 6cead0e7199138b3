"""The admin's "Erase the user and all their memory" action in a real browser: the confirmation page, then
the account and its files gone."""

from __future__ import annotations

from pathlib import Path

from django.core.files.storage import default_storage

from memory.models import Blob, User
from memory.services.scratchpad import scratchpad_write
from tests.factories import UserFactory
from tests.web.conftest import screenshot, sign_in_as


def test_the_erase_action_asks_first_then_erases_the_account_and_its_files(page, live_server, blob_dir: Path) -> None:
    from memory.access import access_for_user
    from memory.services.artifacts import artifact_put
    from memory.services.blobs import SpooledUpload

    admin = User.objects.create_superuser("root", "root@example.test", "pw")
    alice = UserFactory.create(username="alice")
    scratchpad_write(access=access_for_user(user=alice), content="alice's notes", expected_version=None)
    artifact_put(access=access_for_user(user=alice), upload=SpooledUpload([b"alice's bytes"]), mime_type="text/plain")
    name = Blob.objects.get(owner=alice).storage_name
    assert default_storage.exists(name)

    sign_in_as(page, live_server, admin)
    page.goto(f"{live_server.url}/admin/memory/user/")
    page.locator(f"input[name=_selected_action][value='{alice.pk}']").check()
    page.select_option("select[name=action]", "erase_with_memory")
    page.click("button[name=index], input[name=index]")
    page.wait_for_selector("text=Erase the user and all their memory?")
    row = page.locator("tr.erase-account")
    assert row.count() == 1 and "alice" in row.inner_text()
    screenshot(page, "admin-erase-user-confirmation")
    assert page.get_attribute("a.cancel-link", "href") == "/admin/memory/user/"
    assert User.objects.filter(pk=alice.pk).exists()  # only asked so far

    page.click("input[value='Yes, erase them and all their memory']")
    page.wait_for_selector("text=Erased 1 account(s)")
    assert not User.objects.filter(pk=alice.pk).exists()
    assert not Blob.objects.exists() and not default_storage.exists(name)

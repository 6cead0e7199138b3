"""`/ui/activity/`: the audit trail in words, who did what through which surface, filters, paging, links."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.test import Client

from memory.access import Access, access_for_user
from memory.activity import activity_for_access
from memory.models import ChangeSurface, Claim, MemoryEvent
from tests.conftest import Api, Persona
from tests.factories import UserFactory
from tests.web.conftest import screenshots, sign_in_as
from tests.web.memories import say

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_owner_reads_who_did_what_and_through_which_surface(page, live_server, api: Api, owner: Persona) -> None:
    say(api, owner, "I live in Utrecht.", "I prefer morning meetings.")
    claim = Claim.objects.filter(owner=owner.user).order_by("recorded_at").first()
    assert claim is not None
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/claims/{claim.pk}/")
    page.get_by_role("button", name="Pin", exact=True).click()
    page.get_by_role("button", name="Unpin", exact=True).wait_for()
    assert Claim.objects.get(pk=claim.pk).pinned
    page.goto(f"{live_server.url}/ui/activity/")
    rows = page.locator("#activity tbody tr")
    assert rows.count() == MemoryEvent.objects.filter(owner=owner.user).count()
    newest = rows.first.inner_text()
    assert "Pinned" in newest and "You" in newest and "web UI" in newest
    assert rows.first.get_by_role("link", name=claim.statement).get_attribute("href") == f"/ui/claims/{claim.pk}/"
    text = page.inner_text("#activity")
    assert "Learned from a source" in text and "The pipeline" in text and "pipeline" in text
    assert "Token \u201cowner\u201d" in text and "REST API" in text and "Source stored" in text
    screenshots(page, "ui-activity")

    page.select_option("#f-who", "pipeline")
    page.get_by_role("button", name="Filter").click()
    extracted = MemoryEvent.objects.filter(owner=owner.user, action="claim.extract").count()
    by_system = MemoryEvent.objects.filter(owner=owner.user, actor_kind="system").count()  # + the fixture's token
    assert extracted >= 2 and rows.count() == by_system == extracted + 1
    assert set(rows.locator("td[data-label='Who']").all_inner_texts()) == {"The pipeline"}

    page.goto(f"{live_server.url}/ui/activity/?surface=rest")
    assert rows.count() == 1 and "Source stored" in rows.first.inner_text()


def test_filters_and_keyset_paging(api: Api, owner: Persona) -> None:
    say(api, owner, "I live in Utrecht.", "I prefer morning meetings.", "I drink tea.")
    access = access_for_user(user=owner.user)  # type: ignore[arg-type]
    total = MemoryEvent.objects.filter(owner=owner.user).count()
    assert total >= 4
    seen: list[str] = []
    cursor = None
    while True:
        page = activity_for_access(access, cursor=cursor, limit=2)
        seen += [row.event.pk for row in page.rows]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    newest_first = list(MemoryEvent.objects.filter(owner=owner.user).order_by("-created_at", "-id"))
    assert seen == [event.pk for event in newest_first]
    assert {row.event.action for row in activity_for_access(access, action="claim.extract").rows} == {"claim.extract"}
    assert activity_for_access(access, surface=ChangeSurface.UNKNOWN).rows == []
    assert activity_for_access(access, who="you").rows == []
    assert len(activity_for_access(access, who="token").rows) == 1
    today = newest_first[0].created_at.date()
    assert len(activity_for_access(access, since=today, until=today).rows) == total
    assert activity_for_access(access, until=today - timedelta(days=1)).rows == []
    assert activity_for_access(access, since=date(2099, 1, 1)).rows == []


def test_another_person_sees_none_of_it_and_a_visitor_is_sent_to_sign_in(api: Api, owner: Persona) -> None:
    say(api, owner, "I live in Utrecht.")
    claim = Claim.objects.get(owner=owner.user)
    stranger = UserFactory.create(username="mallory")
    client = Client()
    client.force_login(stranger)
    response = client.get("/ui/activity/")
    assert response.status_code == 200
    body = response.content.decode()
    assert claim.pk not in body and 'id="activity"' not in body and "Nothing has happened here" in body
    assert Client().get("/ui/activity/")["Location"].startswith("/accounts/login/")


def test_only_the_partitions_in_view(owner: Persona) -> None:
    from memory.models import Partition
    from memory.services.memories import memory_save

    user = owner.user
    assert user is not None
    Partition.objects.create(owner=user, key="work", label="Work")
    memory_save(access=access_for_user(user=user, partition_key="work"), key="db", value="PostgreSQL")
    memory_save(access=access_for_user(user=user), key="tea", value="Green")

    def actions(access: Access) -> list[tuple[str, str | None]]:
        return [(row.event.action, row.event.partition.key if row.event.partition else None)
                for row in activity_for_access(access).rows]  # fmt: skip

    personal = actions(access_for_user(user=user))
    assert ("memory.save", "memory:personal") in personal and ("memory.save", "work") not in personal
    assert ("token.issue", None) in personal  # person-wide rows have no partition: shown in every view
    workspace = actions(access_for_user(user=user, workspace=True))
    assert {("memory.save", "memory:personal"), ("memory.save", "work")} <= set(workspace)
    assert actions(access_for_user(user=user, partition_key="work")).count(("memory.save", "work")) == 1

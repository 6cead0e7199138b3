"""/ui/claims/: the list with filters and keyset paging, one claim with its evidence and history, and its
lifecycle actions (correct, pin, unpin, expire, retract, confirm, erase) through the claim services."""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from memory.models import Claim
from tests.conftest import Api, Persona
from tests.factories import ClaimFactory, PartitionFactory, UserFactory
from tests.web.conftest import post_without_csrf, screenshots, sign_in_as
from tests.web.memories import claim, say

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ACTIONS = ("pin", "unpin", "expire", "retract", "confirm", "undo-review", "correct", "erase")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def status_shown(page) -> str:
    return page.locator("#claim .status").inner_text()


def test_the_owner_reads_a_claim_corrects_it_and_sees_the_history(page, live_server, api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.", "My brother Hendrik lives in Zwolle.")
    preference = claim("Prefers morning meetings.")
    evidence = preference.evidence.get()
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/claims/")
    assert "Prefers morning meetings." in page.inner_text("#claims")
    screenshots(page, "ui-claims-list")
    page.get_by_role("link", name="Prefers morning meetings.").click()
    page.wait_for_url(f"**/ui/claims/{preference.pk}/")
    assert page.inner_text("#statement") == "Prefers morning meetings."
    assert "alice" in page.inner_text("#subject")
    link = page.locator("#evidence a")
    assert link.get_attribute("href") == f"/ui/sources/{evidence.source_id}/#message-{evidence.message_id}"
    assert "I prefer morning meetings." in page.inner_text("#evidence")
    screenshots(page, "ui-claim-detail")

    page.get_by_label("Correct the statement").fill("Prefers meetings before 10:00.")
    page.get_by_role("button", name="Save correction").click()
    page.wait_for_load_state("load")
    corrected = Claim.objects.get(statement="Prefers meetings before 10:00.")
    assert page.url.endswith(f"/ui/claims/{corrected.pk}/")
    assert page.inner_text("#statement") == "Prefers meetings before 10:00."
    history = page.inner_text("#history")
    assert "Prefers morning meetings." in history and "superseded" in history
    assert history.index("Prefers morning meetings.") < history.index("Prefers meetings before 10:00.")
    assert "The old text is kept in the history." in page.inner_text(".messages")
    screenshots(page, "ui-claim-history")


def test_pin_unpin_expire_retract_and_confirm_change_what_is_shown(page, live_server, api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.", "I like strong coffee.")
    meetings, coffee = claim("Prefers morning meetings."), claim("Likes strong coffee.")
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/claims/{meetings.pk}/")
    page.evaluate("window.samePage = true")  # survives only if htmx updates the page in place
    page.get_by_role("button", name="Pin", exact=True).click()
    expect(page.get_by_role("button", name="Unpin")).to_be_visible()
    assert "pinned" in page.inner_text("#claim") and claim("Prefers morning meetings.").pinned
    assert "Pinned" in page.inner_text(".messages")
    assert page.evaluate("window.samePage === true")
    page.get_by_role("button", name="Unpin").click()
    expect(page.get_by_role("button", name="Pin", exact=True)).to_be_visible()
    assert "pinned" not in page.inner_text("#claim") and not claim("Prefers morning meetings.").pinned
    page.get_by_role("button", name="Expire").click()
    expect(page.locator("#claim .status")).to_have_text("expired")
    page.goto(f"{live_server.url}/ui/claims/{coffee.pk}/")
    page.get_by_role("button", name="Retract").click()
    expect(page.locator("#claim .status")).to_have_text("retracted")
    Claim.objects.filter(pk=coffee.pk).update(status="suggested")  # as reconcile leaves a conflicting claim
    page.reload()
    assert status_shown(page) == "suggested"
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("#claim .status")).to_have_text("active")
    assert claim("Likes strong coffee.").status == "active"


def test_the_actions_work_without_script(browser, live_server, api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    meetings = claim("Prefers morning meetings.")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        sign_in_as(page, live_server, owner.user)
        page.goto(f"{live_server.url}/ui/claims/{meetings.pk}/")
        page.get_by_role("button", name="Pin", exact=True).click()
        page.wait_for_url(f"**/ui/claims/{meetings.pk}/")
        expect(page.get_by_role("button", name="Unpin")).to_be_visible()
        assert claim("Prefers morning meetings.").pinned
    finally:
        context.close()


def test_erase_asks_first_says_what_goes_and_then_it_is_gone(page, live_server, api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.", "I like strong coffee.")
    from memory.access import access_for_user
    from memory.services.claims import claim_correct

    first = claim("Prefers morning meetings.")
    assert owner.user is not None
    second = claim_correct(access=access_for_user(user=owner.user), claim_id=first.pk, statement="Prefers 9:00.")
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/claims/{second.pk}/")
    page.get_by_role("link", name="Erase…").click()
    page.wait_for_url(f"**/ui/claims/{second.pk}/erase")
    doomed = page.inner_text("#doomed")
    assert "Prefers morning meetings." in doomed and "Prefers 9:00." in doomed  # every revision goes
    assert "Likes strong coffee." not in doomed
    assert Claim.objects.filter(pk=second.pk).exists()  # asking removed nothing
    screenshots(page, "ui-claim-erase")
    page.get_by_role("button", name="Erase 2 claims").click()
    page.wait_for_url("**/ui/claims/")
    assert "Erased 2 claims" in page.inner_text(".messages")
    assert not Claim.objects.filter(pk__in=[first.pk, second.pk]).exists()
    assert claim("Likes strong coffee.").status == "active"
    assert page.goto(f"{live_server.url}/ui/claims/{second.pk}/").status == 404


def test_a_refused_action_shows_the_services_message(api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    preference = claim("Prefers morning meetings.")
    client = signed_in(owner.user)
    page = client.post(f"/ui/claims/{preference.pk}/correct", {"statement": "   "}, follow=True)
    assert page.status_code == 200
    assert "The corrected statement is empty." in page.content.decode()
    assert claim("Prefers morning meetings.").status == "active"
    client.post(f"/ui/claims/{preference.pk}/pin")
    page = client.post(f"/ui/claims/{preference.pk}/expire", follow=True)
    assert page.status_code == 200
    assert "Pinned claims do not expire; unpin it first." in page.content.decode()
    assert claim("Prefers morning meetings.").status == "active"


def test_a_structured_value_reads_as_words_and_a_nested_one_as_indented_json(api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    preference = claim("Prefers morning meetings.")
    client = signed_in(owner.user)
    value = preference.object_value
    assert isinstance(value, dict) and value  # the extractor's flat bookkeeping of a preference
    shown = client.get(f"/ui/claims/{preference.pk}/").content.decode()
    assert " \u00b7 ".join(f"{key}: {'no' if item is False else 'yes' if item is True else item}"
                            for key, item in sorted(value.items())) in shown  # fmt: skip
    Claim.objects.filter(pk=preference.pk).update(object_value={"room": {"floor": 3}})
    shown = client.get(f"/ui/claims/{preference.pk}/").content.decode()
    assert '<pre class="value">{\n  &quot;room&quot;: {\n    &quot;floor&quot;: 3' in shown


def test_filters_narrow_the_list_and_pages_follow_each_other(api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.", "My brother Hendrik lives in Zwolle.")
    assert owner.user is not None
    apollo = PartitionFactory.create(owner=owner.user, key="project:apollo")
    ClaimFactory.create_batch(30, owner=owner.user, kind="fact")
    ClaimFactory.create(owner=owner.user, partition=apollo, statement="Apollo ships in May.", kind="decision")
    pinned = ClaimFactory.create(owner=owner.user, statement="Pinned one.", pinned=True, kind="fact", origin="manual")
    ClaimFactory.create(owner=owner.user, statement="Old one.", status="expired", kind="fact")
    client = signed_in(owner.user)

    def listed(query: str) -> str:
        response = client.get(f"/ui/claims/?{query}")
        assert response.status_code == 200
        return response.content.decode()

    assert "Prefers morning meetings." in listed("kind=preference")
    assert "Pinned one." not in listed("kind=preference")
    assert "Pinned one." in listed("pinned=yes") and "Prefers morning meetings." not in listed("pinned=yes")
    assert "Old one." in listed("status=expired") and "Old one." not in listed("")
    assert "Pinned one." in listed("origin=manual") and "Prefers morning meetings." not in listed("origin=manual")
    assert "Hendrik" in listed("text=Zwolle") and "Prefers morning meetings." not in listed("text=Zwolle")
    assert "Apollo ships in May." not in listed("")  # strict: the personal partition only
    client.post("/ui/partition", {"partition": "*"})
    assert "Apollo ships in May." in listed("partition=project:apollo")
    assert pinned.statement not in listed("partition=project:apollo")

    seen: list[str] = []
    response = client.get("/ui/claims/?kind=fact")
    while True:
        seen += [c.pk for c in response.context["claims"]]
        cursor = response.context["next_cursor"]
        if not cursor:
            break
        assert "Next page" in response.content.decode()
        response = client.get("/ui/claims/", {"kind": "fact", "cursor": cursor})
    broken = client.get("/ui/claims/", {"cursor": "not-a-cursor"})
    assert broken.status_code == 200 and "The cursor is not valid." in broken.content.decode()
    facts = Claim.objects.filter(owner=owner.user, kind="fact", status="active")
    assert len(seen) == len(set(seen)) == facts.count() > 25  # more than one page, none twice, none missed


def test_another_person_gets_404_on_the_claim_and_every_action(api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    preference = claim("Prefers morning meetings.")
    mallory = signed_in(UserFactory.create(username="mallory"))
    assert mallory.get(f"/ui/claims/{preference.pk}/").status_code == 404
    assert mallory.get(f"/ui/claims/{preference.pk}/erase").status_code == 404
    for action in ACTIONS:
        response = mallory.post(f"/ui/claims/{preference.pk}/{action}", {"statement": "Mine now."})
        assert response.status_code == 404, action
    after = claim("Prefers morning meetings.")
    assert (after.status, after.pinned) == ("active", False)


def test_signed_out_visitors_are_sent_to_sign_in_and_forms_need_csrf(api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    preference = claim("Prefers morning meetings.")
    anonymous = Client()
    for path in ("/ui/claims/", f"/ui/claims/{preference.pk}/", f"/ui/claims/{preference.pk}/erase"):
        response = anonymous.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path
    for action in ACTIONS:
        response = anonymous.post(f"/ui/claims/{preference.pk}/{action}")
        assert response.status_code in (302, 403), action
        assert post_without_csrf(owner.user, f"/ui/claims/{preference.pk}/{action}", {"statement": "x"}) == 403
    assert Claim.objects.filter(pk=preference.pk, status="active", pinned=False).exists()

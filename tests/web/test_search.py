"""/ui/search: the same search as /query/search, with why each result ranked, its evidence linked to its
source, its partition, and reference material only when asked for."""

from __future__ import annotations

import pytest

from memory.access import access_for_user
from memory.pipeline.runner import run_operation
from memory.services.ingestion import DocumentIn, ingest_document
from tests.conftest import Api, Persona
from tests.web.conftest import screenshots, sign_in_as
from tests.web.memories import claim, say

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_search_finds_a_claim_and_shows_why_it_ranked(page, live_server, api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.", "My brother Hendrik lives in Zwolle.")
    preference = claim("Prefers morning meetings.")
    evidence = preference.evidence.get()
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/search?q=morning+meetings")
    result = page.locator(f"#result-{preference.pk}")
    assert result.count() == 1
    assert "Prefers morning meetings." in result.inner_text()
    legs = result.locator(".leg").all_inner_texts()
    assert any(leg.startswith("keyword #") for leg in legs), legs
    assert "memory:personal" in result.inner_text()
    assert "About you" in result.inner_text()  # the owner, not their Self node's label
    link = result.locator(".excerpt a")
    assert link.get_attribute("href") == f"/ui/sources/{evidence.source_id}/#message-{evidence.message_id}"
    assert "I prefer morning meetings." in result.locator(".excerpt").inner_text()
    assert page.locator("#reference-results").count() == 0
    screenshots(page, "ui-search")
    result.locator(".result-text a").click()
    page.wait_for_url(f"**/ui/claims/{preference.pk}/")


def test_reference_material_appears_only_when_asked_for(page, live_server, api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    assert owner.user is not None
    receipt = ingest_document(
        access=access_for_user(user=owner.user),
        document=DocumentIn(id="checklist", content="Release checklist: tag the morning build.", scope="reference"),
    )
    run_operation(receipt.operation.pk)
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/search?q=morning")
    assert "Release checklist" not in page.inner_text("#results")
    page.get_by_label("Include reference material").check()
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**reference=1**")
    assert "Release checklist" in page.inner_text("#reference-results")
    assert "Release checklist" not in page.inner_text("#results")  # the scopes never mix


def test_an_empty_query_shows_how_to_search(page, live_server, owner: Persona) -> None:
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/search?q=")
    assert "Search your memory" in page.inner_text("main")
    assert page.locator("#results").count() == 0
    screenshots(page, "ui-search-empty")


def test_a_signed_out_visitor_is_sent_to_sign_in(page, live_server) -> None:
    page.goto(f"{live_server.url}/ui/search?q=anything")
    assert "/accounts/login/" in page.url

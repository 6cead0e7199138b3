"""`/ui/sources/`: the list, one conversation or document with its operations and claims, the original file
through the artifact service, upload with a live receipt, retry and delete through the REST services."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from memory.access import access_for_user
from memory.errors import NotFound
from memory.models import Claim, User
from memory.pipeline.runner import run_operation
from memory.selectors import source_for_access
from tests.conftest import Api, Persona
from tests.process import celery_worker
from tests.web.conftest import post_without_csrf, screenshots, sign_in_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MARKDOWN = "# Trip notes\n\nI prefer window seats.\n\n<script>document.title='owned'</script>\n"


def conversation(api: Api, persona: Persona) -> dict[str, Any]:
    messages = [
        {"id": "m1", "role": "user", "speaker": "Alice", "content": "I prefer morning meetings.",
         "timestamp": "2026-04-22T09:15:00Z"},
        {"id": "m2", "role": "assistant", "content": "Noted: mornings.", "timestamp": "2026-04-22T09:15:30Z"},
        {"id": "m3", "role": "user", "speaker": "Alice", "content": "I live in Utrecht.",
         "timestamp": "2026-04-22T09:16:00Z"},
    ]  # fmt: skip
    receipt = api.post("/ingest/conversation", persona, {"conversation": {"id": "planning", "messages": messages}})
    assert receipt.status_code == 202, receipt.content
    run_operation(receipt.json()["operationId"])
    return dict(receipt.json())


def document(api: Api, persona: Persona) -> dict[str, Any]:
    response = api.client.post(
        "/ingest/file",
        {"document": json.dumps({"id": "trip.md", "title": "Trip notes"}),
         "file": _upload("trip.md", MARKDOWN.encode())},
        headers=persona.headers,
    )  # fmt: skip
    assert response.status_code == 202, response.content
    run_operation(response.json()["operationId"])
    return dict(response.json())


def _upload(name: str, data: bytes) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="text/markdown")


def test_a_conversation_shows_its_messages_operations_and_claims(page, live_server, api: Api, owner: Persona) -> None:
    receipt = conversation(api, owner)
    claims = Claim.objects.filter(owner=owner.user, evidence__source__parent_id=receipt["sourceId"]).distinct()
    assert claims.count() >= 2
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/sources/")
    assert "planning" in page.inner_text("#sources")
    screenshots(page, "ui-sources-list")
    page.get_by_role("link", name="planning").click()
    assert page.url.endswith(f"/ui/sources/{receipt['sourceId']}/")
    messages = page.locator("#messages li").all_inner_texts()
    assert len(messages) == 3
    assert "Alice" in messages[0] and "I prefer morning meetings." in messages[0] and "22 Apr 2026" in messages[0]
    assert "assistant" in messages[1]
    listed = page.locator("#claims a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert sorted(listed) == sorted(f"/ui/claims/{claim.pk}/" for claim in claims)
    operation = page.locator(f"#operations [data-operation='{receipt['operationId']}']")
    assert operation.get_attribute("data-status") == "completed"
    assert operation.locator(".pill.done").count() == 7
    screenshots(page, "ui-source-conversation")


def test_a_claims_evidence_link_lands_on_its_message_in_the_conversation(api: Api, owner: Persona) -> None:
    receipt = conversation(api, owner)
    client = Client()
    client.force_login(_user(owner))
    claim = Claim.objects.get(owner=owner.user, statement="Lives in Utrecht.")
    message = claim.evidence.get().source
    page = client.get(f"/ui/claims/{claim.pk}/").content.decode()
    assert f'href="/ui/sources/{message.pk}/#message-m3"' in page
    landed = client.get(f"/ui/sources/{message.pk}/")
    assert (landed.status_code, landed["Location"]) == (302, f"/ui/sources/{receipt['sourceId']}/#message-m3")
    assert 'id="message-m3"' in client.get(landed["Location"]).content.decode()


def test_a_document_shows_its_markdown_as_text_and_the_original_downloads(
    page, live_server, api: Api, owner: Persona
) -> None:
    receipt = document(api, owner)
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/sources/{receipt['sourceId']}/")
    text = page.inner_text("#text")
    assert "I prefer window seats." in text
    assert "<script>" in text  # shown as text, never run as HTML
    assert page.title() != "owned"
    download = page.request.get(f"{live_server.url}/ui/sources/{receipt['sourceId']}/original")
    assert download.status == 200
    assert download.body() == MARKDOWN.encode()
    assert "attachment" in download.headers["content-disposition"]
    screenshots(page, "ui-source-document")


def test_another_user_gets_404_for_the_source_and_its_original(api: Api, owner: Persona, other: Persona) -> None:
    receipt = document(api, owner)
    client = Client()
    client.force_login(_user(other))
    for path in (f"/ui/sources/{receipt['sourceId']}/", f"/ui/sources/{receipt['sourceId']}/original"):
        assert client.get(path).status_code == 404, path
    client.force_login(_user(owner))
    assert client.get(f"/ui/sources/{receipt['sourceId']}/original").status_code == 200


def test_a_signed_out_visitor_is_sent_to_sign_in(client: Client) -> None:
    for path in ("/ui/sources/", "/ui/sources/upload/", "/ui/sources/src_x/", "/ui/sources/src_x/original"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path


def test_upload_retry_and_delete_refuse_a_post_without_csrf(api: Api, owner: Persona) -> None:
    receipt = conversation(api, owner)
    source = receipt["sourceId"]
    assert post_without_csrf(owner.user, "/ui/sources/upload/", {"scope": "personal"}) == 403
    assert post_without_csrf(owner.user, f"/ui/sources/{source}/retry", {"operation": receipt["operationId"]}) == 403
    assert post_without_csrf(owner.user, f"/ui/sources/{source}/delete") == 403
    assert source_for_access(access_for_user(user=_user(owner)), source).pk == source  # still there


def test_delete_asks_then_erases_the_source_and_its_claims(page, live_server, api: Api, owner: Persona) -> None:
    receipt = conversation(api, owner)
    claim_ids = list(Claim.objects.filter(evidence__source__parent_id=receipt["sourceId"]).values_list("pk", flat=True))
    assert claim_ids
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/sources/{receipt['sourceId']}/")
    page.get_by_text("Delete this source…").click()
    warning = page.inner_text(".confirm")
    assert "3 messages" in warning and f"{len(claim_ids)} claims" in warning
    page.get_by_role("button", name="Delete for good").click()
    page.wait_for_url(f"{live_server.url}/ui/sources/")
    assert "Erased the source" in page.inner_text(".messages")
    with pytest.raises(NotFound):
        source_for_access(access_for_user(user=_user(owner)), receipt["sourceId"])
    assert not Claim.objects.filter(pk__in=claim_ids).exists()


def test_retry_requeues_a_failed_operation(page, live_server, api: Api, owner: Persona) -> None:
    from memory.models import Operation

    receipt = conversation(api, owner)
    Operation.objects.filter(pk=receipt["operationId"]).update(status="failed", error_code="INTERNAL")
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/sources/{receipt['sourceId']}/")
    page.get_by_role("button", name="Retry").click()
    page.wait_for_load_state("load")
    assert "Queued again." in page.inner_text(".messages")
    assert Operation.objects.get(pk=receipt["operationId"]).status in {"queued", "processing", "completed"}


def test_upload_shows_the_receipt_reaching_completed_live(page, asgi_server, owner: Persona, tmp_path) -> None:
    note = tmp_path / "plans.md"
    note.write_text("# Plans\n\nI prefer aisle seats on long flights.\n")
    with celery_worker(settings.DATABASES["default"]["NAME"]):
        sign_in_as(page, asgi_server, owner.user)
        page.goto(f"{asgi_server.url}/ui/sources/upload/")
        screenshots(page, "ui-source-upload")
        page.get_by_label("File").set_input_files(str(note))
        page.get_by_label("Scope").select_option("personal")
        page.get_by_role("button", name="Upload").click()
        page.wait_for_selector("#receipt [data-operation]")
        first = page.get_attribute("#receipt [data-operation]", "data-status")
        page.wait_for_selector("#receipt [data-operation][data-status=completed]", timeout=90_000)
    assert first in {"queued", "processing"}  # it was not finished when the page was drawn
    assert page.locator("#receipt .pill.done").count() == 7
    screenshots(page, "ui-source-upload-done")


def test_the_list_filters_by_kind_and_by_partition_in_the_workspace_view(api: Api, owner: Persona) -> None:
    from tests.factories import PartitionFactory

    conversation(api, owner)
    document(api, owner)
    PartitionFactory.create(owner=owner.user, key="project:apollo", label="Apollo")
    moved = api.post(
        "/ingest/document", owner, {"document": {"id": "apollo-plan", "content": "Launch in May."},
                                    "partitionKey": "project:apollo"},
    )  # fmt: skip
    assert moved.status_code == 202, moved.content
    client = Client()
    client.force_login(_user(owner))
    strict = client.get("/ui/sources/").content.decode()
    assert "planning" in strict and "Trip notes" in strict and "apollo-plan" not in strict  # personal only
    assert "Trip notes" not in client.get("/ui/sources/?kind=conversation").content.decode()
    client.post("/ui/partition", {"partition": "*"})
    workspace = client.get("/ui/sources/").content.decode()
    assert "apollo-plan" in workspace and "planning" in workspace
    narrowed = client.get("/ui/sources/?partition=project:apollo").content.decode()
    assert "apollo-plan" in narrowed and "planning" not in narrowed
    waiting = client.get("/ui/sources/?status=queued").content.decode()  # apollo-plan was never processed
    assert "apollo-plan" in waiting and "planning" not in waiting and ">queued<" in waiting
    completed = client.get("/ui/sources/?status=completed").content.decode()
    assert "planning" in completed and "Trip notes" in completed and "apollo-plan" not in completed


def _user(persona: Persona) -> User:
    assert persona.user is not None
    return persona.user

"""`/ui/`: counts from the real pipeline, recent changes, and a processing queue kept live by the websocket."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Claim, MemoryEvent, Source
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona
from tests.factories import PartitionFactory
from tests.web.conftest import screenshots, sign_in_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def converse(api: Api, persona: Persona, chat: str, *lines: str) -> dict[str, Any]:
    """A conversation through REST; the receipt, not yet processed."""
    messages = [
        {"id": f"{chat}-{n}", "role": "user", "content": text, "timestamp": f"2026-04-22T10:00:{n:02d}Z"}
        for n, text in enumerate(lines)
    ]
    response = api.post("/ingest/conversation", persona, {"conversation": {"id": chat, "messages": messages}})
    assert response.status_code == 202, response.content
    return dict(response.json())


def test_the_dashboard_counts_what_the_pipeline_stored(
    page, asgi_server, api: Api, owner: Persona, other: Persona
) -> None:
    receipt = converse(api, owner, "chat-1", "I prefer morning meetings.", "I live in Utrecht.",
                       "I need to send the report to Marcel by Friday.")  # fmt: skip
    run_operation(receipt["operationId"])
    run_operation(converse(api, other, "bobs", "I prefer tea.")["operationId"])  # never counted for alice
    alice = owner.user
    active = Claim.objects.filter(owner=alice, status="active").count()
    assert active >= 2

    sign_in_as(page, asgi_server, alice)
    page.goto(f"{asgi_server.url}/ui/")
    assert page.inner_text("[data-count=active] strong") == str(active)
    assert page.inner_text("[data-count=sources] strong") == str(
        Source.objects.filter(owner=alice, parent__isnull=True).count()
    )
    assert page.inner_text("#claims-by-status [data-status=active]") == str(active)
    recent = page.inner_text("#recent")
    latest = MemoryEvent.objects.filter(owner=alice).latest("created_at")
    assert latest.action in recent
    extracted = Claim.objects.filter(owner=alice, status="active").first()
    assert extracted is not None and extracted.statement in recent  # claims read as what they say
    queue = page.locator(f"#queue [data-operation='{receipt['operationId']}']")
    assert queue.get_attribute("data-status") == "completed"
    assert "prefer tea" not in page.content()
    screenshots(page, "ui-dashboard")


def test_a_conversation_ingested_while_the_dashboard_is_open_appears_in_the_queue(
    page, asgi_server, api: Api, owner: Persona
) -> None:
    sign_in_as(page, asgi_server, owner.user)
    page.goto(f"{asgi_server.url}/ui/")
    page.wait_for_selector("body[data-live]")  # the websocket is open
    assert page.locator("#queue [data-operation]").count() == 0
    PartitionFactory.create(owner=owner.user, key="project:apollo")
    elsewhere = api.post("/ingest/conversation", owner, {
        "conversation": {"id": "apollo", "messages": [{"id": "a1", "role": "user", "content": "I prefer rockets."}]},
        "partitionKey": "project:apollo",
    }).json()  # fmt: skip
    run_operation(elsewhere["operationId"])  # its events reach the socket first, and are not in this view
    receipt = converse(api, owner, "chat-live", "I prefer green tea.")
    run_operation(receipt["operationId"])  # publishes each step to the owner's websocket group
    row = page.locator(f"#queue [data-operation='{receipt['operationId']}']")
    row.wait_for()
    page.wait_for_selector(f"#queue [data-operation='{receipt['operationId']}'][data-status=completed]")
    assert row.locator(".pill.done[data-step=extract]").count() == 1
    assert page.locator(f"#queue [data-operation='{elsewhere['operationId']}']").count() == 0  # strict view
    assert page.url == f"{asgi_server.url}/ui/"  # no reload happened: the row was added by the script


def test_a_signed_out_visitor_is_sent_to_sign_in(page, live_server) -> None:
    page.goto(f"{live_server.url}/ui/")
    assert "/accounts/login/" in page.url

"""Every audit row names the surface the change came through: REST, the web UI, the admin, the pipeline (MCP is
in tests/mcp/test_change_surface.py, against the real MCP server); rows from before the field say "unknown"."""

from __future__ import annotations

import pytest
from django.test import Client

from memory.models import ChangeSurface, Claim, MemoryEvent, Partition
from tests.conftest import Api, Persona
from tests.factories import UserFactory
from tests.web.memories import say

pytestmark = pytest.mark.django_db(transaction=True)


def surfaces(action: str) -> set[str]:
    return set(MemoryEvent.objects.filter(action=action).values_list("surface", flat=True))


def test_rest_ingest_and_the_pipeline_record_their_surfaces(api: Api, owner: Persona) -> None:
    say(api, owner, "I live in Utrecht.")
    assert surfaces("source.ingest") == {ChangeSurface.REST}
    assert surfaces("claim.extract") == {ChangeSurface.PIPELINE}


def test_a_pin_in_the_web_ui_records_ui(api: Api, owner: Persona) -> None:
    say(api, owner, "I live in Utrecht.")
    claim = Claim.objects.filter(owner=owner.user).first()
    assert claim is not None
    client = Client()
    client.force_login(claim.owner)
    assert client.post(f"/ui/claims/{claim.pk}/pin").status_code == 302
    assert surfaces("claim.pin") == {ChangeSurface.UI}


def test_a_rest_pin_records_rest(api: Api, owner: Persona) -> None:
    say(api, owner, "I live in Utrecht.")
    claim = Claim.objects.filter(owner=owner.user).first()
    assert claim is not None
    assert api.post("/claim/pin", owner, {"claimId": claim.pk}).status_code == 200
    assert surfaces("claim.pin") == {ChangeSurface.REST}


def test_an_admin_action_records_admin(owner: Persona) -> None:
    assert owner.user is not None
    partition = Partition.objects.create(owner=owner.user, key="work", label="Work")
    admin = UserFactory.create(username="root", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    response = client.post("/admin/memory/partition/", {"action": "deactivate", "_selected_action": [partition.pk]})
    assert response.status_code == 302
    event = MemoryEvent.objects.get(action="partition.deactivate")
    assert (event.surface, event.actor_user_id) == (ChangeSurface.ADMIN, admin.pk)

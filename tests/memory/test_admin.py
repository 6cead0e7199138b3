"""Django admin: tokens are issued with the secret shown once, rotated and revoked as actions."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from memory.models import AccessToken, MemoryEvent, Partition
from tests.conftest import Api, Persona, error_code
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db

SECRET = re.compile(r'<code class="token-secret">(mem_[A-Za-z0-9_-]+)</code>')


def test_creating_a_token_shows_its_secret_once(admin_client: Client, api: Api, alice) -> None:
    response = admin_client.post(
        "/admin/memory/accesstoken/add/",
        {
            "owner": alice.pk, "label": "Claude Desktop", "surface": "mcp", "scopes": ["read", "write"],
            "partition_keys": "", "default_partition_key": "", "profile": "assistant",
        },
    )  # fmt: skip
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    secret = SECRET.search(response.content.decode())
    assert secret is not None
    token = AccessToken.objects.get(label="Claude Desktop")
    assert token.secret_hash != secret.group(1)
    assert api.post("/whoami", Persona("admin-made", alice, token, secret.group(1))).status_code == 200
    page = html.unescape(response.content.decode())
    bearer = f"Authorization: Bearer {secret.group(1)}"
    setup = f'claude mcp add --transport http memory http://testserver/mcp --header "{bearer}"'
    assert setup in page  # ready to paste, with this server's address
    assert '"url": "http://testserver/mcp"' in page
    assert "?token=" not in page  # this token may not travel in a URL
    detail = admin_client.get(f"/admin/memory/accesstoken/{token.pk}/change/").content.decode()
    assert secret.group(1) not in detail
    assert token.prefix in detail


def test_invalid_token_settings_are_form_errors(admin_client: Client, alice) -> None:
    response = admin_client.post(
        "/admin/memory/accesstoken/add/",
        {"owner": alice.pk, "label": "host", "surface": "host", "scopes": ["read"], "profile": "assistant"},
    )
    assert response.status_code == 200
    assert "needs the users it may act for" in response.content.decode()
    assert not AccessToken.objects.filter(label="host").exists()


def test_token_list_shows_prefix_scopes_partitions_and_last_use(admin_client: Client, owner: Persona) -> None:
    page = admin_client.get("/admin/memory/accesstoken/").content.decode()
    assert owner.secret[:12] in page
    assert "read, write, edit, maintenance" in page
    assert owner.secret not in page


def test_rotate_action_shows_new_secret_and_revokes_old(admin_client: Client, api: Api, owner: Persona, alice) -> None:
    assert owner.token is not None
    response = admin_client.post(
        "/admin/memory/accesstoken/", {"action": "rotate", "_selected_action": [owner.token.pk]}
    )
    secret = SECRET.search(response.content.decode())
    assert secret is not None
    assert error_code(api.post("/whoami", owner)) == "TOKEN_REVOKED"
    assert api.post("/whoami", Persona("new", alice, None, secret.group(1))).status_code == 200
    assert MemoryEvent.objects.filter(action="token.revoke", actor_kind="user").exists()


def test_revoke_action(admin_client: Client, api: Api, owner: Persona) -> None:
    assert owner.token is not None
    admin_client.post("/admin/memory/accesstoken/", {"action": "revoke", "_selected_action": [owner.token.pk]})
    assert error_code(api.post("/whoami", owner)) == "TOKEN_REVOKED"


def test_partition_deactivate_action(admin_client: Client, alice) -> None:
    partition = PartitionFactory.create(owner=alice, key="project:apollo")
    personal = Partition.objects.get(owner=alice, key="memory:personal")
    admin_client.post(
        "/admin/memory/partition/", {"action": "deactivate", "_selected_action": [partition.pk, personal.pk]}
    )
    assert not Partition.objects.get(pk=partition.pk).is_active
    assert Partition.objects.get(pk=personal.pk).is_active  # refused, with a message
    event = MemoryEvent.objects.get(action="partition.deactivate")
    assert event.actor_user is not None
    assert event.actor_user.username == "root"


def test_admin_user_creation_gives_a_personal_partition(admin_client: Client) -> None:
    admin_client.post(
        "/admin/memory/user/add/",
        {
            "username": "dave",
            "external_id": "",
            "email": "",
            "password1": "a-long-pass-phrase-1",
            "password2": "a-long-pass-phrase-1",
        },
    )
    dave_partitions = Partition.objects.filter(owner__username="dave").values_list("key", "owner__external_id")
    assert list(dave_partitions) == [("memory:personal", "dave")]


def test_non_staff_cannot_open_the_admin(client: Client, alice) -> None:
    client.force_login(alice)
    response = client.get("/admin/memory/accesstoken/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_operations_can_be_retried_from_the_admin(admin_client: Client, api: Api, owner: Persona) -> None:
    from memory.models import Operation

    receipt = api.post("/ingest/document", owner, {"document": {"id": "d", "content": "x"}}).json()
    Operation.objects.filter(pk=receipt["operationId"]).update(status="failed", error_code="INTERNAL_ERROR")
    admin_client.post("/admin/memory/operation/", {"action": "retry", "_selected_action": [receipt["operationId"]]})
    operation = Operation.objects.get(pk=receipt["operationId"])
    assert (operation.status, operation.error_code) == ("queued", "")
    assert MemoryEvent.objects.filter(action="operation.retry", actor_kind="user").exists()


def test_source_pages_do_not_show_content(admin_client: Client, api: Api, owner: Persona) -> None:
    receipt = api.post("/ingest/document", owner, {"document": {"id": "d", "content": "very private words"}}).json()
    page = admin_client.get(f"/admin/memory/source/{receipt['sourceId']}/change/")
    assert page.status_code == 200
    assert "very private words" not in page.content.decode()


def test_a_task_added_in_the_admin_gets_a_candidate_status(admin_client: Client, alice) -> None:
    from memory.models import Claim, Node

    personal = Partition.objects.get(owner=alice, key="memory:personal")
    response = admin_client.post(
        "/admin/memory/node/add/",
        {"owner": alice.pk, "partition": personal.pk, "type": "Task", "label": "Renew passport", "summary": "",
         "scope": "personal"},
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:500]
    task = Node.objects.get(label="Renew passport")
    status = Claim.objects.get(subject=task, predicate="HAS_TASK_STATUS", status="active")
    assert (status.object_value, status.origin) == ("pending", "assistant_inferred")
    assert MemoryEvent.objects.filter(action="task.status", target_id=task.pk).exists()


def test_claims_and_metrics_pages_open(admin_client: Client, alice) -> None:
    from tests.factories import ClaimFactory

    ClaimFactory.create(owner=alice, statement="Prefers tea.")
    assert "Prefers tea." in admin_client.get("/admin/memory/claim/").content.decode()
    assert admin_client.get("/admin/metrics/metricdefinition/").status_code == 200
    assert admin_client.get("/admin/metrics/observation/").status_code == 200


def test_a_node_cannot_be_put_in_another_users_partition(admin_client: Client, alice, bob) -> None:
    from memory.models import Node

    bobs = Partition.objects.get(owner=bob, key="memory:personal")
    response = admin_client.post(
        "/admin/memory/node/add/",
        {"owner": alice.pk, "partition": bobs.pk, "type": "Task", "label": "Renew passport", "summary": "",
         "scope": "personal"},
    )  # fmt: skip
    assert response.status_code == 200
    assert "belongs to bob" in html.unescape(response.content.decode())
    assert not Node.objects.exists()


def test_a_token_expiring_in_the_past_is_a_form_error(admin_client: Client, alice) -> None:
    response = admin_client.post(
        "/admin/memory/accesstoken/add/",
        {
            "owner": alice.pk, "label": "stale", "surface": "rest", "scopes": ["read"], "profile": "assistant",
            "partition_keys": "", "default_partition_key": "", "expires_at_0": "2000-01-01", "expires_at_1": "00:00:00",
        },
    )  # fmt: skip
    assert response.status_code == 200
    assert "must be in the future" in response.content.decode()
    assert not AccessToken.objects.filter(label="stale").exists()

"""The admin lists every model with a fixed number of queries however many rows it shows; merging entities
previews what moves before applying it; reactivating a partition is audited; view-only pages say so."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from allauth.account.models import EmailAddress
from django.contrib import admin
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memory.access import access_for_user
from memory.models import Alias, Claim, MemoryEvent, Node, Partition, RedisDebtKind, User
from memory.services.artifacts import artifact_put
from memory.services.blobs import SpooledUpload
from memory.services.feedback import feedback_log
from memory.services.memories import memory_save
from memory.services.nodes import alias_add
from memory.services.partitions import partition_deactivate
from memory.services.redis_debts import debt_recorded
from memory.services.scratchpad import scratchpad_write
from memory.services.sessions import session_append_event, session_create
from metrics.services import observation_record
from tests.conftest import Api, issue
from tests.factories import NodeFactory, UserFactory
from tests.web.memories import say

pytestmark = pytest.mark.django_db(transaction=True)


def one_person(api: Api, n: int) -> None:
    """A person with a little of everything the admin lists: a processed conversation, a memory, an alias, a
    scratchpad, an agent session, a file, a reading, feedback, an e-mail address, a group."""
    user = UserFactory.create(username=f"person{n}")
    say(api, issue(user, f"token{n}", scopes=["read", "write", "edit"]), "I live in Utrecht.", conversation=f"c{n}")
    access = access_for_user(user=user)
    memory_save(access=access, key=f"note/{n}", value="Tea, not coffee.")
    node = Node.objects.filter(owner=user, is_self=False).first() or NodeFactory.create(owner=user)
    alias_add(access=access, node_id=node.pk, name=f"Place {n}")
    scratchpad_write(access=access, content="Remember the milk.")
    session = session_create(access=access, title=f"Session {n}", agent="claude")
    session_append_event(access=access, session_id=session.pk, kind="note", payload={"text": "hi"})
    artifact_put(access=access, upload=SpooledUpload([f"file {n}".encode()]), mime_type="text/plain")
    observation_record(access, slug="weight", value=80.0 + n, occurred_at=datetime(2026, 4, 22, tzinfo=UTC))
    claim = Claim.objects.filter(owner=user, kind="fact").first() or Claim.objects.filter(owner=user).first()
    assert claim is not None
    source = claim.evidence.first().source  # type: ignore[union-attr]
    feedback_log(access=access, kind="wrong_memory", note="Wrong.", claim_id=claim.pk, source_id=source.pk)
    EmailAddress.objects.create(user=user, email=f"person{n}@example.org", verified=True, primary=True)
    Group.objects.create(name=f"group {n}")
    debt_recorded(kind=RedisDebtKind.MEMORY_VERSION, owner_id=user.pk)  # as when Redis was away as their memory changed


def changelist(client: Client, model: Any) -> tuple[int, int]:
    """(queries, rows shown) of one model's admin list."""
    url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(queries), len(response.context_data["cl"].result_list)  # type: ignore[index]


def test_every_changelist_has_a_fixed_number_of_queries(admin_client: Client, api: Api) -> None:
    one_person(api, 0)
    models = list(admin.site._registry)
    first = {model: changelist(admin_client, model) for model in models}
    for n in range(1, 10):
        one_person(api, n)
    again = {model: changelist(admin_client, model) for model in models}
    for model in models:
        (queries, rows), (queries_after, rows_after) = first[model], again[model]
        assert rows >= 1 and rows_after > rows, model  # the list really showed more rows
        assert queries_after == queries, (
            f"{model.__name__}: {queries} queries for {rows} rows, {queries_after} for {rows_after}"
        )


def test_every_memory_model_is_registered() -> None:
    from django.apps import apps

    for app in ("memory", "metrics"):
        missing = [m.__name__ for m in apps.get_app_config(app).get_models() if not admin.site.is_registered(m)]
        assert missing == [], app


def test_view_only_pages_say_so(admin_client: Client, api: Api) -> None:
    one_person(api, 0)
    alias = Alias.objects.first()
    assert alias is not None
    assert "Aliases (view only)" in admin_client.get("/admin/memory/alias/").content.decode()
    page = admin_client.get(f"/admin/memory/alias/{alias.pk}/change/").content.decode()
    assert "Alias (view only)" in page and 'name="_save"' not in page
    node = Node.objects.filter(owner__username="person0").first()
    assert node is not None
    page = admin_client.get(f"/admin/memory/node/{node.pk}/change/").content.decode()
    assert "(view only)" in page and 'name="_save"' not in page
    assert "<h1>API and MCP calls (view only)</h1>" in admin_client.get("/admin/memory/toolevent/").content.decode()


def test_writes_owed_to_redis_are_for_staff_with_the_permission_alone(client: Client, alice: User) -> None:
    from django.contrib.auth.models import Permission

    debt_recorded(kind=RedisDebtKind.ERASED_VIEWS, owner_id=alice.pk)
    url = "/admin/memory/redisdebt/"
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    client.force_login(alice)  # an owner, not staff
    owner = client.get(url)
    assert owner.status_code == 302 and "/admin/login/" in owner["Location"]
    staff = UserFactory.create(username="helpdesk", is_staff=True)
    client.force_login(staff)
    assert client.get(url).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_redisdebt"))
    assert client.get(url).status_code == 200


def test_writes_owed_to_redis_name_their_owner_or_say_the_account_is_gone(admin_client: Client, alice: User) -> None:
    gone = UserFactory.create()
    gone_id = gone.pk
    gone.delete()
    for owner_id in (alice.pk, gone_id, 0):
        debt_recorded(kind=RedisDebtKind.ERASED_VIEWS, owner_id=owner_id)
    page = admin_client.get("/admin/memory/redisdebt/").content.decode()
    assert "<h1>Writes owed to Redis (view only)</h1>" in page
    assert f">{alice.username}<" in page and f">erased account {gone_id}<" in page and ">every owner<" in page


def test_merge_entities_previews_then_applies(admin_client: Client, alice: User) -> None:
    personal = Partition.objects.get(owner=alice, key="memory:personal")
    bob = NodeFactory.create(owner=alice, partition=personal, type="Person", label="Bob Smith")
    bobby = NodeFactory.create(owner=alice, partition=personal, type="Person", label="Bobby")
    Claim.objects.create(owner=alice, partition=personal, statement="Bobby likes jazz.", kind="fact", subject=bobby)
    selected = {"action": "merge_nodes", "_selected_action": [bob.pk, bobby.pk]}

    preview = admin_client.post("/admin/memory/node/", {**selected, "target": bob.pk})
    assert preview.status_code == 200
    body = preview.content.decode()
    assert 'id="merge-target">Bob Smith<' in body and "<td>Bobby</td><td>1</td>" in body
    assert Claim.objects.get(statement="Bobby likes jazz.").subject_id == bobby.pk  # nothing moved yet

    changed = admin_client.post(
        "/admin/memory/node/", {**selected, "target": bobby.pk, "previewed": bob.pk, "merge": "yes"}
    )
    assert changed.status_code == 200 and Node.objects.get(pk=bob.pk).merged_into_id is None  # previewed again

    done = admin_client.post("/admin/memory/node/", {**selected, "target": bob.pk, "previewed": bob.pk, "merge": "yes"})
    assert done.status_code == 302
    assert Claim.objects.get(statement="Bobby likes jazz.").subject_id == bob.pk
    assert Node.objects.get(pk=bobby.pk).merged_into_id == bob.pk
    assert Alias.objects.filter(node=bob, name="Bobby").exists()
    event = MemoryEvent.objects.get(action="node.merge")
    assert (event.surface, event.target_id) == ("admin", bob.pk)


def test_merge_refuses_entities_of_different_types(admin_client: Client, alice: User) -> None:
    person = NodeFactory.create(owner=alice, type="Person", label="Bob")
    place = NodeFactory.create(owner=alice, type="Place", label="Bobtown")
    response = admin_client.post(
        "/admin/memory/node/", {"action": "merge_nodes", "_selected_action": [person.pk, place.pk]}, follow=True
    )
    assert "Select two or more entities of the same type" in response.content.decode()
    assert not Node.objects.filter(merged_into__isnull=False).exists()


def test_reactivate_a_partition_is_audited(admin_client: Client, alice: User) -> None:
    partition = Partition.objects.create(owner=alice, key="work", label="Work")
    partition_deactivate(access=access_for_user(user=alice), key="work")
    response = admin_client.post(
        "/admin/memory/partition/", {"action": "reactivate", "_selected_action": [partition.pk]}
    )
    assert response.status_code == 302
    partition.refresh_from_db()
    assert partition.is_active and partition.deactivated_at is None
    event = MemoryEvent.objects.get(action="partition.reactivate")
    assert (event.actor_kind, event.surface, event.after) == ("user", "admin", {"isActive": True})


def test_admin_actions_refuse_a_post_without_csrf(alice: User) -> None:
    from tests.web.conftest import post_without_csrf

    root = UserFactory.create(username="root", is_staff=True, is_superuser=True)
    bob, bobby = NodeFactory.create(owner=alice, label="Bob"), NodeFactory.create(owner=alice, label="Bobby")
    merge: Any = {"action": "merge_nodes", "_selected_action": [bob.pk, bobby.pk], "previewed": bob.pk, "merge": "yes"}
    assert post_without_csrf(root, "/admin/memory/node/", merge) == 403
    work = Partition.objects.create(owner=alice, key="work", is_active=False)
    reactivate: Any = {"action": "reactivate", "_selected_action": [work.pk]}
    assert post_without_csrf(root, "/admin/memory/partition/", reactivate) == 403
    assert (
        not Node.objects.filter(merged_into__isnull=False).exists() and not Partition.objects.get(pk=work.pk).is_active
    )

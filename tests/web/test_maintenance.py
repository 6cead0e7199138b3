"""/ui/maintenance/: previews with a reason per item, then apply (stale nodes, orphans, duplicates, reaping,
statusless recovery), vector status with a reindex that reaches 100 %, the export download and the typed erasure
of a partition; all through the maintenance services, as the signed-in owner."""

from __future__ import annotations

import io
import json
import tarfile
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from playwright.sync_api import expect

from maintenance.pruning import MAX_IDLE_DAYS, Thresholds, prune_stale_preview
from maintenance.scoring import min_score_for
from maintenance.vectors import vectors_status
from memory.access import access_for_user
from memory.embeddings import get_embedder
from memory.models import Claim, ClaimOrigin, Node, Partition, Scope, User
from memory.pipeline.runner import run_operation
from memory.web import maintenance
from tests.conftest import Api, Persona
from tests.factories import ClaimFactory, NodeFactory, PartitionFactory
from tests.maintenance.test_vectors import switch_model  # noqa: F401  (a fixture)
from tests.web.conftest import post_without_csrf, screenshots, sign_in_as
from tests.web.memories import say

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
HOME = "/ui/maintenance/"
POSTS = ("stale/", "orphans/", "duplicates/", "reaping/", "recovery/", "reindex", "export", "erase/")


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def chat(api: Api, persona: Persona, conversation: str, text: str, days_ago: int) -> None:
    """One message said `days_ago` days ago, through ingestion and the pipeline."""
    when = (timezone.now() - timedelta(days=days_ago)).replace(microsecond=0)
    message = {"id": f"{conversation}-m1", "role": "user", "content": text, "timestamp": when.isoformat()}
    receipt = api.post("/ingest/conversation", persona, {"conversation": {"id": conversation, "messages": [message]}})
    assert receipt.status_code == 202, receipt.content
    run_operation(receipt.json()["operationId"])


def stale_node(user: User, label: str, days: int = 400) -> Node:
    node = NodeFactory.create(owner=user, label=label)
    Node.objects.filter(pk=node.pk).update(last_seen_at=timezone.now() - timedelta(days=days))
    return node


def row_ids(page: Any) -> set[str]:
    return {row.get_attribute("id").removeprefix("node-") for row in page.locator("#candidates tbody tr").all()}


def test_the_session_acts_as_the_owner_with_maintenance_and_edit(alice: User) -> None:
    """The web UI's Access (web_access builds it with access_for_user) carries every scope the maintenance
    services check, so the owner needs nothing more to maintain their own memory."""
    assert {Scope.MAINTENANCE, Scope.EDIT, Scope.READ} <= access_for_user(user=alice).scopes


def test_prune_preview_then_apply_removes_exactly_the_previewed_nodes(
    page, live_server, api: Api, owner: Persona, alice: User
) -> None:
    chat(api, owner, "old-chat", "I met Jorge at the conference in Berlin.", days_ago=430)
    chat(api, owner, "new-chat", "I met Lena at the conference in Porto.", days_ago=0)
    forgotten, touched = stale_node(alice, "Old Classmate"), stale_node(alice, "Former Neighbour")
    sign_in_as(page, live_server, alice)
    page.goto(f"{live_server.url}{HOME}")
    expect(page.get_by_role("heading", name="Maintenance")).to_be_visible()
    expect(page.locator("#vector-status tbody tr")).to_have_count(4)
    screenshots(page, "ui-maintenance")

    page.get_by_role("link", name="Preview stale nodes").click()
    page.get_by_label("How much to prune").select_option("high")
    page.get_by_label("Idle at least (days)").fill("60")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview h2")).to_be_visible()
    previewed = row_ids(page)
    thresholds = Thresholds(min_score=min_score_for("high"), min_idle_days=60)
    expected = prune_stale_preview(access=access_for_user(user=alice), thresholds=thresholds, limit=100)
    assert previewed == {item.node.pk for item in expected.nodes}
    jorge = Node.objects.get(owner=alice, label="Jorge")
    assert {jorge.pk, forgotten.pk, touched.pk} <= previewed
    assert Node.objects.get(owner=alice, label="Lena").pk not in previewed
    assert "not seen for 14 months" in page.inner_text(f"#node-{jorge.pk} .reason")
    assert "idle 1.00" in page.inner_text(f"#node-{jorge.pk} .terms")
    screenshots(page, "ui-maintenance-stale-preview")

    Node.objects.filter(pk=touched.pk).update(last_seen_at=timezone.now())  # mentioned again meanwhile
    before = set(Node.objects.filter(owner=alice).values_list("pk", flat=True))
    page.get_by_role("button", name="Prune the ticked nodes").click()
    expect(page.locator("#result")).to_be_visible()
    after = set(Node.objects.filter(owner=alice).values_list("pk", flat=True))
    assert before - after == previewed - {touched.pk}
    assert "Old Classmate" in page.inner_text("#deleted") and "Jorge" in page.inner_text("#deleted")
    assert "Former Neighbour" in page.inner_text("#skipped") and "seen within 60 days" in page.inner_text("#skipped")
    screenshots(page, "ui-maintenance-stale-applied")


def test_orphans_duplicates_reaping_and_recovery_preview_then_apply(
    page, live_server, api: Api, owner: Persona, alice: User
) -> None:
    say(api, owner, "I prefer morning meetings.", "My brother Hendrik lives in Zwolle.")
    orphan = NodeFactory.create(owner=alice, label="Nobody In Particular")
    first, second = (NodeFactory.create(owner=alice, label=label) for label in ("Greta Lind", "greta  lind"))
    for node in (first, second):
        ClaimFactory.create(owner=alice, subject=node, statement=f"{node.label} plays the cello.")
    trivia = ClaimFactory.create(
        owner=alice, statement="The cafe has green chairs.", importance=1, origin=ClaimOrigin.ASSISTANT_INFERRED,
        recorded_at=timezone.now() - timedelta(days=200),
    )  # fmt: skip
    task = NodeFactory.create(owner=alice, type="Task", label="Renew the passport")
    sign_in_as(page, live_server, alice)

    page.goto(f"{live_server.url}{HOME}orphans/")
    assert row_ids(page) == {orphan.pk}
    screenshots(page, "ui-maintenance-orphans")
    page.get_by_role("button", name="Delete the ticked orphans").click()
    expect(page.locator("#deleted")).to_contain_text("Nobody In Particular")
    assert not Node.objects.filter(pk=orphan.pk).exists()

    page.goto(f"{live_server.url}{HOME}duplicates/")
    expect(page.locator("#groups tbody tr")).to_have_count(1)
    assert first.pk in page.inner_text("#groups") and second.pk in page.inner_text("#groups")
    screenshots(page, "ui-maintenance-duplicates")
    page.get_by_role("button", name="Merge these duplicates").click()
    expect(page.locator("#result h2")).to_have_text("Merged 1 node in 1 group")
    assert Node.objects.get(pk=second.pk).merged_into_id == first.pk

    page.goto(f"{live_server.url}{HOME}reaping/")
    expect(page.locator("#preview h2")).to_have_text("1 claim to reap")
    assert "never read" in page.inner_text("#claims")
    screenshots(page, "ui-maintenance-reaping")
    page.get_by_role("button", name="Reap 1 claim").click()
    expect(page.locator("#result h2")).to_have_text("Reaped 1 claim")
    trivia.refresh_from_db()
    assert trivia.expires_at is not None

    page.goto(f"{live_server.url}{HOME}recovery/")
    expect(page.locator("#tasks")).to_contain_text("Renew the passport")
    screenshots(page, "ui-maintenance-recovery")
    page.get_by_role("button", name="Recover 1 task").click()
    expect(page.locator("#result h2")).to_have_text("Recovered 1 task")
    status = Claim.objects.get(subject=task, predicate="HAS_TASK_STATUS")
    assert status.object_value == "pending"


def test_reindex_progress_reaches_100_percent(
    page,
    live_server,
    api: Api,
    owner: Persona,
    alice: User,
    switch_model: Any,  # noqa: F811  (the fixture imported above)
    monkeypatch: Any,
) -> None:
    say(api, owner, "I prefer morning meetings.", "My brother Hendrik lives in Zwolle.", "I am allergic to penicillin.")
    switch_model()
    user_rows: dict[str, Any] = {"owner_id": alice.pk, "embedder": get_embedder()}
    stale = vectors_status(**user_rows).remaining
    assert stale > 6
    monkeypatch.setattr(maintenance, "REINDEX_STEP", 3)  # several steps, so the bar has to advance
    steps: list[int] = []
    page.on("response", lambda r: steps.append(r.status) if r.url.endswith("/maintenance/reindex") else None)
    sign_in_as(page, live_server, alice)
    page.goto(f"{live_server.url}{HOME}")
    page.get_by_role("button", name=f"Re-embed {stale} rows").click()
    expect(page.locator("#reindex-count")).to_contain_text("100 %", timeout=60_000)
    assert f"{stale} of {stale} rows re-embedded" in page.inner_text("#reindex-count")
    assert page.locator("#reindex-progress").get_attribute("value") == "100"
    expect(page.locator("#embeddings")).to_contain_text("Every row has a current vector")
    assert len(steps) >= -(-stale // 3) and set(steps) == {200}
    assert vectors_status(**user_rows).remaining == 0
    screenshots(page, "ui-maintenance-reindexed")


def test_export_downloads_a_valid_archive(page, live_server, api: Api, owner: Persona, alice: User) -> None:
    say(api, owner, "I prefer morning meetings.")
    sign_in_as(page, live_server, alice)
    page.goto(f"{live_server.url}{HOME}")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download archive").click()
    data = download.value.path().read_bytes()
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        names = archive.getnames()
        manifest = json.load(archive.extractfile("manifest.json"))  # type: ignore[arg-type]
        claims = archive.extractfile("claims.jsonl").read().decode().splitlines()  # type: ignore[union-attr]
    assert names[0] == "manifest.json" and manifest["format"] == "memory-archive"
    assert manifest["user"]["username"] == "alice"
    assert any(json.loads(line)["statement"] == "Prefers morning meetings." for line in claims)
    assert download.value.suggested_filename.endswith(".tar")


def test_erasing_a_partition_needs_its_key_typed(page, live_server, alice: User) -> None:
    apollo = PartitionFactory.create(owner=alice, key="project:apollo", label="Apollo")
    ClaimFactory.create(owner=alice, partition=apollo, statement="The launch is in May.")
    NodeFactory.create(owner=alice, partition=apollo, label="Launch pad")
    sign_in_as(page, live_server, alice)
    page.goto(f"{live_server.url}{HOME}")
    page.get_by_label("Partition to erase").select_option("project:apollo")
    page.get_by_role("button", name="Review erasure…").click()
    expect(page.locator("#counts")).to_contain_text("claims")
    screenshots(page, "ui-maintenance-erase")
    page.get_by_label("Type project:apollo to confirm").fill("project:apolo")
    page.get_by_role("button", name="Erase project:apollo").click()
    expect(page.locator(".messages")).to_contain_text("Nothing was erased")
    assert Partition.objects.filter(pk=apollo.pk).exists() and Claim.objects.filter(partition=apollo).exists()
    page.get_by_label("Type project:apollo to confirm").fill("project:apollo")
    page.get_by_role("button", name="Erase project:apollo").click()
    page.wait_for_url(f"**{HOME}")
    expect(page.locator(".messages")).to_contain_text("Erased project:apollo")
    assert not Partition.objects.filter(pk=apollo.pk).exists()
    assert not Claim.objects.filter(statement="The launch is in May.").exists()


def test_another_user_reaches_nothing_of_the_owners(alice: User, bob: User) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    stale, orphan = stale_node(alice, "Old Classmate"), NodeFactory.create(owner=alice, label="Nobody")
    ClaimFactory.create(owner=alice, subject=stale, statement="Old Classmate likes chess.")
    as_bob = signed_in(bob)
    assert as_bob.get(f"{HOME}erase/", {"partition": "project:apollo"}).status_code == 404
    assert as_bob.post(f"{HOME}erase/", {"partition": "project:apollo", "confirm": "project:apollo"}).status_code == 404
    assert as_bob.post(f"{HOME}export", {"partition": "project:apollo"}).status_code == 404
    pruned = as_bob.post(f"{HOME}stale/", {"aggressiveness": "high", "minIdleDays": "0", "node": [stale.pk]})
    assert pruned.status_code == 200 and "not found (deleted or out of reach)" in pruned.content.decode()
    pruned = as_bob.post(f"{HOME}orphans/", {"node": [orphan.pk]})
    assert "not found (deleted or out of reach)" in pruned.content.decode()
    assert Node.objects.filter(pk__in=[stale.pk, orphan.pk]).count() == 2
    assert Partition.objects.filter(owner=alice, key="project:apollo").exists()
    # bob's own previews list nothing of alice's
    assert (
        "Old Classmate"
        not in as_bob.get(f"{HOME}stale/", {"aggressiveness": "high", "minIdleDays": "0"}).content.decode()
    )
    assert "Nobody" not in as_bob.get(f"{HOME}orphans/").content.decode()


def test_the_stale_form_refuses_settings_out_of_range_and_lists_nothing(alice: User) -> None:
    """Idle days past the bound (where the preview's moment would overflow), below zero or not a number, and a level
    not offered: the page says what to fix, previews nothing and deletes nothing."""
    old = stale_node(alice, "Old Classmate")
    as_alice = signed_in(alice)
    for settings, field in [
        ({"aggressiveness": "high", "minIdleDays": "800000"}, "Idle at least (days): Ensure this value is less"),
        ({"aggressiveness": "high", "minIdleDays": "-1"}, "Idle at least (days): Ensure this value is greater"),
        ({"aggressiveness": "high", "minIdleDays": "soon"}, "Idle at least (days): Enter a whole number"),
        ({"aggressiveness": "wild", "minIdleDays": "30"}, "How much to prune: Select a valid choice"),
    ]:
        page = as_alice.get(f"{HOME}stale/", settings)
        assert page.status_code == 200, settings
        text = page.content.decode()
        assert f"Check the settings: {field}" in text and "Old Classmate" not in text, settings
        assert f'max="{MAX_IDLE_DAYS}"' in text  # the field offers the range the form checks
        applied = as_alice.post(f"{HOME}stale/", {**settings, "node": [old.pk]})
        assert applied.status_code == 200 and "Check the settings" in applied.content.decode(), settings
    assert Node.objects.filter(pk=old.pk).exists()


def test_a_signed_out_visitor_is_sent_to_sign_in(client: Client) -> None:
    for path in ("", "stale/", "orphans/", "duplicates/", "reaping/", "recovery/", "erase/"):
        response = client.get(f"{HOME}{path}")
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path
    for path in POSTS:
        response = client.post(f"{HOME}{path}")
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path


def test_every_form_refuses_a_post_without_csrf(alice: User) -> None:
    for path in POSTS:
        assert post_without_csrf(alice, f"{HOME}{path}", {"partition": "memory:personal"}) == 403, path

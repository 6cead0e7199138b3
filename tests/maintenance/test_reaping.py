"""Reaping (seeds/001): unimportant claims nobody has read for REAP_AFTER_DAYS get `expires_at` now and leave
recall; nothing is deleted, and the lifecycle sweep marks them expired later. Pinned, user-stated and manual
claims are never reaped."""

from __future__ import annotations

import logging
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from maintenance.reaping import reap, reap_everyone
from memory.models import Claim, ClaimOrigin, ClaimStatus, MemoryEvent, Partition, Scope, ToolProfile, User
from memory.recall.bookkeeping import flush_access
from memory.services.lifecycle import run_maintenance
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import ClaimFactory
from tests.mcp.conftest import McpService, call, mcp_persona, rest

pytestmark = pytest.mark.django_db

OLD = timedelta(days=200)


def idle_claim(owner: User, statement: str = "", **fields: Any) -> Claim:
    """A claim that qualifies for reaping unless `fields` say otherwise: importance 1, inferred, recorded
    200 days ago and never read."""
    defaults: dict[str, Any] = {
        "importance": 1, "origin": ClaimOrigin.ASSISTANT_INFERRED, "recorded_at": timezone.now() - OLD,
    }  # fmt: skip
    if statement:
        defaults["statement"] = statement
    return ClaimFactory.create(owner=owner, **(defaults | fields))


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    return dict(response.json())


# --- the rules -----------------------------------------------------------------------------------------


def test_each_rule_keeps_its_claim(alice: User) -> None:
    now = timezone.now()
    reapable = [
        idle_claim(alice, "Old unread trivia."),
        idle_claim(alice, "Imported trivia.", origin=ClaimOrigin.IMPORTED, importance=2),
        idle_claim(alice, "Read long ago.", last_accessed_at=now - OLD, recorded_at=now - 2 * OLD),
        idle_claim(alice, "Far future expiry.", expires_at=now + timedelta(days=30)),
    ]
    kept = [
        idle_claim(alice, "Important.", importance=3),
        idle_claim(alice, "Recent.", recorded_at=now - timedelta(days=10)),
        idle_claim(alice, "Old but read lately.", last_accessed_at=now - timedelta(days=5)),
        idle_claim(alice, "Pinned.", pinned=True),
        idle_claim(alice, "The user said so.", origin=ClaimOrigin.USER_STATED),
        idle_claim(alice, "Entered by hand.", origin=ClaimOrigin.MANUAL),
        idle_claim(alice, "Already expired.", expires_at=now - timedelta(days=1)),
        idle_claim(alice, "Expired status.", status=ClaimStatus.EXPIRED),
        idle_claim(alice, "Superseded.", status=ClaimStatus.SUPERSEDED),
        idle_claim(alice, "A keyed memory.", key="agent:last-build"),
    ]

    result = reap(owner_id=alice.pk, apply=True, sample=50)

    assert result.reaped == result.candidates == len(reapable)
    for claim in reapable:
        claim.refresh_from_db()
        assert claim.expires_at is not None and claim.expires_at <= timezone.now(), claim.statement
        assert claim.status == ClaimStatus.ACTIVE  # the lifecycle sweep marks it expired, not reaping
    for claim in kept:
        before = claim.expires_at
        claim.refresh_from_db()
        assert claim.expires_at == before, claim.statement
    assert Claim.objects.filter(owner=alice).count() == len(reapable) + len(kept)  # nothing deleted


def test_the_thresholds_come_from_settings(alice: User, settings: Any) -> None:
    claim = idle_claim(alice, importance=3, recorded_at=timezone.now() - timedelta(days=40))
    assert reap(owner_id=alice.pk, apply=False).candidates == 0
    settings.REAP_MAX_IMPORTANCE = 3
    assert reap(owner_id=alice.pk, apply=False).candidates == 0  # still read too recently
    settings.REAP_AFTER_DAYS = 30
    assert [item.pk for item in reap(owner_id=alice.pk, apply=False).sample] == [claim.pk]


def test_preview_equals_apply_and_changes_nothing(alice: User) -> None:
    claims = [idle_claim(alice, f"Trivia number {n}.") for n in range(5)]
    idle_claim(alice, "Pinned trivia.", pinned=True)

    preview = reap(owner_id=alice.pk, apply=False, limit=3, sample=10)
    assert preview.candidates == 5 and preview.reaped == 0 and len(preview.sample) == 3
    assert not Claim.objects.filter(owner=alice, expires_at__isnull=False).exists()
    assert not MemoryEvent.objects.filter(owner=alice, action="claim.reap").exists()

    applied = reap(owner_id=alice.pk, apply=True, limit=3, sample=10)
    assert applied.reaped == 3
    assert [c.pk for c in applied.sample] == [c.pk for c in preview.sample]
    reaped_ids = set(Claim.objects.filter(owner=alice, expires_at__isnull=False).values_list("pk", flat=True))
    assert reaped_ids == {c.pk for c in preview.sample}
    assert reaped_ids <= {c.pk for c in claims}

    rest = reap(owner_id=alice.pk, apply=True, sample=10)
    assert (rest.candidates, rest.reaped) == (2, 2)
    assert reap(owner_id=alice.pk, apply=True).candidates == 0  # idempotent


def test_reaped_claims_leave_recall_at_once_and_expire_later(
    transactional_db: None, api: Api, owner: Persona, alice: User
) -> None:
    """Committed rows: the search's now() is the time of its own transaction, as in production."""
    idle_claim(alice, "The zeppelin hangar has blue doors.")
    assert ok(api.post("/query/search", owner, {"query": "zeppelin hangar"}))["searchResults"]
    flush_access()  # the search above counted an access: the claim is no longer idle
    Claim.objects.filter(owner=alice).update(last_accessed_at=timezone.now() - OLD)

    assert reap(owner_id=alice.pk, apply=True).reaped == 1
    assert ok(api.post("/query/search", owner, {"query": "zeppelin hangar"}))["searchResults"] == []
    assert run_maintenance(owner_id=alice.pk).expired == 1
    claim = Claim.objects.get(owner=alice)
    assert claim.status == ClaimStatus.EXPIRED
    assert [e.action for e in MemoryEvent.objects.filter(target_id=claim.pk).order_by("id")][-2:] == [
        "claim.reap", "claim.expire",
    ]  # fmt: skip


def test_a_claim_found_by_recall_is_not_reaped(api: Api, owner: Persona, alice: User) -> None:
    """Reaping rests on access bookkeeping: a search counts an access (flushed by beat), which makes the claim
    recent again."""
    flush_access()  # whatever earlier tests left pending
    claim = idle_claim(alice, "The lighthouse keeper collects barometers.")
    assert reap(owner_id=alice.pk, apply=False).candidates == 1
    results = ok(api.post("/query/search", owner, {"query": "lighthouse barometers"}))["searchResults"]
    assert [r["id"] for r in results] == [claim.pk]
    assert flush_access() == 1
    claim.refresh_from_db()
    assert claim.access_count == 1 and claim.last_accessed_at is not None
    assert reap(owner_id=alice.pk, apply=False).candidates == 0


def test_each_reaped_claim_is_audited_and_the_run_logged(alice: User, caplog: Any) -> None:
    claims = [idle_claim(alice, f"Trivia {n}.") for n in range(2)]
    with caplog.at_level(logging.INFO, logger="maintenance"):
        reap(owner_id=alice.pk, apply=True)
    events = MemoryEvent.objects.filter(owner=alice, action="claim.reap")
    assert sorted(e.target_id for e in events) == sorted(c.pk for c in claims)
    event = events.first()
    assert event is not None and event.actor_kind == "system" and (event.after or {})["importance"] == 1
    logged = [r for r in caplog.records if r.getMessage() == "maintenance.reaped"]
    counted = [
        (r.__dict__["ownerId"], r.__dict__["candidates"], r.__dict__["reaped"], r.__dict__["dryRun"]) for r in logged
    ]
    assert counted == [(alice.pk, 2, 2, False)]


def test_the_count_and_the_first_claims_come_from_one_scan(alice: User, bob: User) -> None:
    """A preview reads the claims once, for their count and the ids of the first (longest unread); the sample is
    then read by those ids. The count and an ordered list read every claim twice (0.76 + 0.82 s at a million)."""
    now = timezone.now()
    claims = [idle_claim(alice, f"Trivia {n}.", recorded_at=now - OLD - timedelta(days=n)) for n in range(5)]
    idle_claim(bob, "His trivia.")
    with CaptureQueriesContext(connection) as statements:
        preview = reap(owner_id=alice.pk, apply=False, sample=3)
    reads = [q["sql"] for q in statements.captured_queries if 'FROM "memory_claim"' in q["sql"]]
    assert len(reads) == 2 and "OVER ()" in reads[0] and '"memory_claim"."id" IN' in reads[1]
    assert preview.candidates == 5
    assert [claim.pk for claim in preview.sample] == [claim.pk for claim in claims[::-1][:3]]  # longest unread first
    limited = reap(owner_id=alice.pk, apply=False, sample=3, limit=2)
    assert limited.candidates == 5 and len(limited.sample) == 2
    assert reap(owner_id=alice.pk, apply=False, sample=0).candidates == 5
    applied = reap(owner_id=alice.pk, apply=True, limit=2, sample=5)
    assert (applied.candidates, applied.reaped) == (5, 2)
    assert {claim.pk for claim in applied.sample} == {claims[4].pk, claims[3].pk}
    assert reap(owner_id=bob.pk, apply=False).candidates == 1


def test_partitions_out_of_reach_are_left_alone(alice: User) -> None:
    work = Partition.objects.create(owner=alice, key="project:work", label="Work")
    personal = idle_claim(alice, "Personal trivia.")
    at_work = idle_claim(alice, "Work trivia.", partition=work)
    assert reap(owner_id=alice.pk, partition_ids=[personal.partition_id], apply=True).reaped == 1
    at_work.refresh_from_db()
    assert at_work.expires_at is None


# --- beat --------------------------------------------------------------------------------------------


def test_beat_reaps_every_user_on_the_configured_interval(alice: User, bob: User) -> None:
    from config.celery import app
    from maintenance.tasks import reap_claims

    entries = [entry for entry in settings.CELERY_BEAT_SCHEDULE.values() if entry["task"] == "maintenance.reap"]
    assert [entry["schedule"] for entry in entries] == [settings.REAP_INTERVAL_HOURS * 3600]
    app.autodiscover_tasks(force=True)
    assert "maintenance.reap" in app.tasks

    mine, his = idle_claim(alice), idle_claim(bob)
    assert reap_claims() == {"users": 2, "reaped": 2}
    for claim in (mine, his):
        claim.refresh_from_db()
        assert claim.expires_at is not None
    assert reap_everyone() == {"users": 0, "reaped": 0}


def test_the_interval_setting_defaults_to_a_day() -> None:
    assert (settings.REAP_INTERVAL_HOURS, settings.REAP_MAX_IMPORTANCE, settings.REAP_AFTER_DAYS) == (24, 2, 90)


# --- REST --------------------------------------------------------------------------------------------


def test_rest_preview_by_default_then_apply(api: Api, owner: Persona, alice: User) -> None:
    claim = idle_claim(alice, "Trivia about kettles.")
    preview = ok(api.post("/maintenance/reap", owner, {}))
    assert preview["dryRun"] is True and preview["candidates"] == 1 and preview["reaped"] == 0
    assert preview["sample"][0] == {
        "claimId": claim.pk, "statement": "Trivia about kettles.", "importance": 1, "origin": "assistant_inferred",
        "idleSince": preview["sample"][0]["idleSince"],
    }  # fmt: skip
    assert (preview["maxImportance"], preview["afterDays"]) == (2, 90)
    assert Claim.objects.get(pk=claim.pk).expires_at is None
    applied = ok(api.post("/maintenance/reap", owner, {"dryRun": False}))
    assert (applied["dryRun"], applied["candidates"], applied["reaped"]) == (False, 1, 1)
    assert Claim.objects.get(pk=claim.pk).expires_at is not None


def test_rest_apply_needs_the_maintenance_scope(api: Api, alice: User) -> None:
    reader = issue(alice, "reader", scopes=[Scope.READ])
    idle_claim(alice)
    assert ok(api.post("/maintenance/reap", reader, {}))["candidates"] == 1
    response = api.post("/maintenance/reap", reader, {"dryRun": False})
    assert response.status_code == 403 and error_code(response) == "SCOPE_REQUIRED"
    assert not Claim.objects.filter(expires_at__isnull=False).exists()


def test_rest_personas(api: Api, other: Persona, outsider: Persona, revoked: Persona, alice: User) -> None:
    idle_claim(alice)
    mine = ok(api.post("/maintenance/reap", other, {"dryRun": False}))
    assert (mine["candidates"], mine["reaped"]) == (0, 0)  # bob sees and reaps only his own
    assert error_code(api.post("/maintenance/reap", other, {"userId": alice.external_id})) == "NOT_FOUND"
    assert error_code(api.post("/maintenance/reap", outsider, {})) == "TOKEN_INVALID"
    assert error_code(api.post("/maintenance/reap", revoked, {"dryRun": False})) == "TOKEN_REVOKED"
    assert error_code(api.post("/maintenance/reap", None, {})) == "AUTH_REQUIRED"
    assert not Claim.objects.filter(expires_at__isnull=False).exists()


@pytest.mark.parametrize(
    "body",
    [{"dryRun": "maybe"}, {"limit": 0}, {"limit": 100_001}, {"sample": -1}, {"sample": 1000}, {"limit": "x"},
     {"dryrun": False}],
)  # fmt: skip
def test_rest_bad_input(api: Api, owner: Persona, alice: User, body: dict[str, Any]) -> None:
    idle_claim(alice)
    response = api.post("/maintenance/reap", owner, body)
    assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"
    assert not Claim.objects.filter(expires_at__isnull=False).exists()


def test_rest_malformed_json(api: Api, owner: Persona) -> None:
    assert error_code(api.post("/maintenance/reap", owner, raw="{not json")) == "MALFORMED_JSON"


# --- CLI ---------------------------------------------------------------------------------------------


def run(*args: str) -> str:
    out = StringIO()
    call_command("reap", *args, stdout=out)
    return out.getvalue()


def test_cli_previews_unless_told_to_apply(alice: User, bob: User) -> None:
    idle_claim(alice)
    idle_claim(bob)
    assert run("--user", "alice").splitlines() == ["alice: 1 claim(s) to reap (dry run; add --apply)"]
    assert not Claim.objects.filter(expires_at__isnull=False).exists()
    assert run("--user", "alice", "--apply").splitlines() == ["alice: 1 claim(s) reaped"]
    assert Claim.objects.filter(expires_at__isnull=False).get().owner_id == alice.pk
    assert run("--apply").splitlines() == ["bob: 1 claim(s) reaped"]
    assert run().splitlines() == []


def test_cli_refuses_bad_arguments(db: None) -> None:
    with pytest.raises(CommandError, match="No user"):
        run("--user", "nobody")
    with pytest.raises(CommandError, match="--limit"):
        run("--limit", "-1")


# --- MCP, over real HTTP -------------------------------------------------------------------------------


def test_mcp_reap_claims_previews_then_applies_like_rest(
    mcp_service: McpService, mcp_owner: Persona, alice: User
) -> None:
    claim = idle_claim(alice, "Trivia about kettles.")
    preview = call(mcp_service, mcp_owner, "reap_claims", {})
    assert not preview.is_error and preview.payload == rest(mcp_service, mcp_owner, "/maintenance/reap")
    assert preview.payload["candidates"] == 1 and preview.payload["sample"][0]["claimId"] == claim.pk
    assert Claim.objects.get(pk=claim.pk).expires_at is None
    applied = call(mcp_service, mcp_owner, "reap_claims", {"dryRun": False})
    assert (applied.payload["reaped"], applied.payload["dryRun"]) == (1, False)
    assert Claim.objects.get(pk=claim.pk).expires_at is not None


def test_mcp_reap_claims_refusals(mcp_service: McpService, mcp_other: Persona, alice: User) -> None:
    claim = idle_claim(alice)
    reader = mcp_persona(alice, "mcp-reader", scopes=[Scope.READ])
    assert call(mcp_service, reader, "reap_claims", {"dryRun": False}).code == "SCOPE_REQUIRED"
    assert call(mcp_service, reader, "reap_claims", {"limit": 0}).code == "VALIDATION_ERROR"
    assert call(mcp_service, mcp_other, "reap_claims", {"userId": alice.external_id}).code == "NOT_FOUND"
    assert call(mcp_service, mcp_other, "reap_claims", {"dryRun": False}).payload["reaped"] == 0
    assistant = mcp_persona(alice, "mcp-assistant", profile=ToolProfile.ASSISTANT)
    assert call(mcp_service, assistant, "reap_claims", {}).code == "NOT_FOUND"  # full profile only
    assert Claim.objects.get(pk=claim.pk).expires_at is None

"""The maintenance tools (full profile only) over real HTTP: a preview needs no confirmation, applying needs
edit, maintenance and confirm: true, and each answers like its REST endpoint."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from memory.models import Node, Scope, ToolProfile, User
from tests.conftest import Persona
from tests.factories import NodeFactory
from tests.mcp.conftest import McpService, ToolAnswer, call, mcp_persona, rest, rpc

TOOLS = ("prune_stale_nodes", "prune_orphan_nodes", "dedup_sweep", "cleanup")


def ok(answer: ToolAnswer) -> Any:
    assert not answer.is_error, answer.payload
    return answer.payload


def old_node(user: User, label: str) -> Node:
    node = NodeFactory.create(owner=user, label=label)
    Node.objects.filter(pk=node.pk).update(last_seen_at=timezone.now() - timedelta(days=400))
    return node


def without_clock(answer: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in answer.items() if name not in ("asOf", "nextCursor")}


def test_maintenance_tools_preview_like_rest_and_apply_only_when_confirmed(
    mcp_service: McpService, mcp_owner: Persona, alice: User
) -> None:
    stale = old_node(alice, "Jorge")
    preview = ok(call(mcp_service, mcp_owner, "prune_stale_nodes", {"limit": 10}))
    assert preview["nodeIds"] == [stale.pk] and preview["nodes"][0]["reason"].startswith("not seen for 13 months")
    assert without_clock(preview) == without_clock(rest(mcp_service, mcp_owner, "/maintenance/prune-stale-nodes",
                                                        {"limit": 10}))  # fmt: skip
    for tool in ("prune_orphan_nodes", "dedup_sweep", "cleanup"):
        path = {"prune_orphan_nodes": "/maintenance/prune-orphan-nodes", "dedup_sweep": "/cleanup/dedup-sweep"}
        assert ok(call(mcp_service, mcp_owner, tool)) == rest(mcp_service, mcp_owner, path.get(tool, "/cleanup"))

    apply = {"dryRun": False, "nodeIds": preview["nodeIds"]}
    unconfirmed = call(mcp_service, mcp_owner, "prune_stale_nodes", apply)
    assert unconfirmed.is_error and unconfirmed.code == "VALIDATION_ERROR"
    assert "confirm" in unconfirmed.payload["error"]["details"]
    assert Node.objects.filter(pk=stale.pk).exists()
    applied = ok(call(mcp_service, mcp_owner, "prune_stale_nodes", {**apply, "confirm": True}))
    assert applied["deleted"] == [stale.pk] and not Node.objects.filter(pk=stale.pk).exists()
    orphan = NodeFactory.create(owner=alice, label="Nobody")
    assert ok(call(mcp_service, mcp_owner, "cleanup", {"dryRun": False, "confirm": True}))["pruneOrphanNodes"] == {
        "dryRun": False, "candidateCount": 1, "nodes": [{"nodeId": orphan.pk, "type": "Person", "label": "Nobody",
                                                          "partitionKey": "memory:personal"}], "deletedCount": 1,
    }  # fmt: skip


def test_applying_needs_edit_and_maintenance_previews_need_only_read(
    mcp_service: McpService, transactional_db: None, alice: User
) -> None:
    stale = old_node(alice, "Jorge")
    reader = mcp_persona(alice, "reader", scopes=[Scope.READ])
    editor = mcp_persona(alice, "editor", scopes=[Scope.READ, Scope.WRITE, Scope.EDIT])
    assert ok(call(mcp_service, reader, "prune_stale_nodes"))["nodeIds"] == [stale.pk]
    applying = [("prune_stale_nodes", {"nodeIds": [stale.pk]}), ("prune_orphan_nodes", {}), ("dedup_sweep", {}),
                ("cleanup", {})]  # fmt: skip
    for tool, arguments in applying:
        ok(call(mcp_service, reader, tool))
        refused = call(mcp_service, reader, tool, {**arguments, "dryRun": False, "confirm": True})
        assert refused.code == "SCOPE_REQUIRED" and refused.payload["error"]["details"] == {"requiredScope": "edit"}
    for tool, arguments in applying:
        refused = call(mcp_service, editor, tool, {**arguments, "dryRun": False, "confirm": True})
        assert refused.code == "SCOPE_REQUIRED", tool
        assert refused.payload["error"]["details"] == {"requiredScope": "maintenance"}
    assert Node.objects.filter(pk=stale.pk).exists()


def test_maintenance_tools_are_listed_only_in_the_full_profile(
    mcp_service: McpService, transactional_db: None, alice: User
) -> None:
    for profile in (ToolProfile.ASSISTANT, ToolProfile.AGENT):
        persona = mcp_persona(alice, f"p-{profile}", profile=profile)
        names = {tool["name"] for tool in rpc(mcp_service, persona, "tools/list").json()["result"]["tools"]}
        assert not names & set(TOOLS)
        assert call(mcp_service, persona, "cleanup").code == "NOT_FOUND"
    full = mcp_persona(alice, "full")
    listed = {tool["name"]: tool for tool in rpc(mcp_service, full, "tools/list").json()["result"]["tools"]}
    for tool in TOOLS:
        assert listed[tool]["annotations"]["destructiveHint"] is True
        assert "confirm" in listed[tool]["inputSchema"]["properties"]


def test_another_users_maintenance_reaches_nothing_of_the_owners(
    mcp_service: McpService, mcp_owner: Persona, mcp_other: Persona, alice: User
) -> None:
    stale = old_node(alice, "Jorge")
    orphan = NodeFactory.create(owner=alice, label="Nobody")
    assert ok(call(mcp_service, mcp_other, "prune_stale_nodes"))["candidateCount"] == 0
    applied = ok(call(mcp_service, mcp_other, "prune_stale_nodes",
                      {"dryRun": False, "nodeIds": [stale.pk], "confirm": True}))  # fmt: skip
    assert applied["deleted"] == [] and applied["skipped"][0]["reason"].startswith("not found")
    ok(call(mcp_service, mcp_other, "cleanup", {"dryRun": False, "confirm": True}))
    assert call(mcp_service, mcp_other, "cleanup", {"userId": "alice"}).code == "NOT_FOUND"
    assert Node.objects.filter(pk__in=[stale.pk, orphan.pk]).count() == 2


def test_bad_input_over_mcp_is_a_validation_error(mcp_service: McpService, mcp_owner: Persona) -> None:
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("prune_stale_nodes", {"aggressiveness": "extreme"}, "aggressiveness"),
        ("prune_stale_nodes", {"dryRun": False, "confirm": True}, "nodeIds"),
        ("prune_orphan_nodes", {"limit": 9999}, "limit"),
        ("dedup_sweep", {"dryRun": "perhaps"}, "dryRun"),
        ("cleanup", {"recoverStatuslessCommitments": "nope"}, "recoverStatuslessCommitments"),
    ]
    for tool, arguments, field in cases:
        answer = call(mcp_service, mcp_owner, tool, arguments)
        assert answer.code == "VALIDATION_ERROR" and field in answer.payload["error"]["details"], (tool, answer)

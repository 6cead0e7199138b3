"""The erasure tools over real HTTP: listed only in the full profile, each needing `edit` and confirm: true,
and none reaching another user's memory."""

from __future__ import annotations

from typing import Any

import pytest

from config.celery import app as celery_app
from memory.models import Partition, Scope, Scratchpad, ToolProfile, User
from tests.conftest import Persona
from tests.mcp.conftest import McpService, call, mcp_persona, rest, rpc

ERASE_TOOLS = {"erase_partition", "erase_session", "erase_artifact", "erase_metric_observations", "erase_metric"}


@pytest.fixture(autouse=True)
def _no_queued_jobs() -> Any:
    yield
    celery_app.control.purge()


def test_erasure_tools_are_listed_only_in_the_full_profile_and_marked_destructive(
    mcp_service: McpService, transactional_db: None, alice: User
) -> None:
    for profile in (ToolProfile.ASSISTANT, ToolProfile.AGENT, ToolProfile.FULL):
        persona = mcp_persona(alice, f"list-{profile}", profile=profile)
        tools = {tool["name"]: tool for tool in rpc(mcp_service, persona, "tools/list").json()["result"]["tools"]}
        listed = ERASE_TOOLS & set(tools)
        assert listed == (ERASE_TOOLS if profile == ToolProfile.FULL else set()), profile
        for name in listed:
            assert tools[name]["annotations"]["destructiveHint"] is True
            schema = tools[name]["inputSchema"]
            assert "confirm" in schema["properties"]
            # A preview (dryRun, the default) needs no confirmation; a tool without one always does.
            assert ("confirm" in schema.get("required", [])) is ("dryRun" not in schema["properties"]), name


def test_erase_partition_needs_edit_and_confirmation_and_reaches_only_the_callers_memory(
    mcp_service: McpService, mcp_owner: Persona, mcp_other: Persona, alice: User
) -> None:
    rest(mcp_service, mcp_owner, "/partitions/create", {"key": "project:apollo"})
    rest(mcp_service, mcp_owner, "/scratchpad/write", {"content": "apollo notes", "partitionKey": "project:apollo"})
    apply = {"key": "project:apollo", "dryRun": False}
    writer = mcp_persona(alice, "no-edit", scopes=[Scope.READ, Scope.WRITE])
    assert call(mcp_service, writer, "erase_partition", {**apply, "confirm": True}).code == "SCOPE_REQUIRED"
    for confirm in ({}, {"confirm": False}, {"confirm": "project:apollo"}):
        answer = call(mcp_service, mcp_owner, "erase_partition", {**apply, **confirm})
        assert answer.is_error and answer.code == "VALIDATION_ERROR", answer.payload
    assert call(mcp_service, mcp_other, "erase_partition", {**apply, "confirm": True}).code == "NOT_FOUND"
    assert Scratchpad.objects.filter(partition__key="project:apollo", owner=alice).exists()
    preview = call(mcp_service, mcp_owner, "erase_partition", {"key": "project:apollo", "confirm": True}).payload
    assert preview["dryRun"] is True and preview["counts"]["scratchpad"] == 1
    erased = call(mcp_service, mcp_owner, "erase_partition", {**apply, "confirm": True})
    assert not erased.is_error and erased.payload["counts"]["scratchpad"] == 1
    assert not Partition.objects.filter(owner=alice, key="project:apollo").exists()

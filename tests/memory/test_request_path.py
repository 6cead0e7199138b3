"""The fixed cost of a REST call, counted: database queries and Redis round trips of authentication, throttle,
Access and telemetry, and that what a process keeps of a token never outlives a change to it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.access import Actor, access_for_user
from memory.models import AccessToken, Partition, Scope, ToolEvent
from memory.services.partitions import partition_create, partition_deactivate
from memory.services.telemetry import ToolEventWriter
from memory.services.tokens import token_rotate
from tests.conftest import Api, Persona, error_code, issue

pytestmark = pytest.mark.django_db


def _tables(queries: CaptureQueriesContext) -> list[str]:
    """The table of each query (savepoints are the test's own transaction, not the request's)."""
    sql = [query["sql"] for query in queries.captured_queries]
    kept = [text for text in sql if not text.startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]
    return [text.split('"')[1] if '"' in text else text.split()[0] for text in kept]


def test_a_warmed_token_costs_one_query_the_event_row(api: Api, owner: Persona) -> None:
    with CaptureQueriesContext(connection) as first:
        assert api.post("/whoami", owner).status_code == 200
    # token, its last use (once a minute), the partitions, the event row
    assert _tables(first) == ["memory_accesstoken", "memory_accesstoken", "memory_partition", "memory_toolevent"]
    with CaptureQueriesContext(connection) as second:
        assert api.post("/whoami", owner).status_code == 200
    assert _tables(second) == ["memory_toolevent"]


def test_a_warmed_call_makes_one_round_trip_to_redis(api: Api, owner: Persona) -> None:
    api.post("/whoami", owner)
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    redis.config_resetstat()
    assert api.post("/whoami", owner).status_code == 200
    calls = {name: stats["calls"] for name, stats in redis.info("commandstats").items()}
    calls.pop("cmdstat_config", None)
    scripts = calls.pop("cmdstat_evalsha", 0) + calls.pop("cmdstat_eval", 0)
    assert scripts == 1  # the token's generation and its rate window, in one script
    # Commands the script ran count here too; nothing else was sent.
    assert set(calls) <= {"cmdstat_get", "cmdstat_zremrangebyscore", "cmdstat_zcard", "cmdstat_zadd", "cmdstat_expire"}


def test_a_cached_token_rotated_is_refused_on_the_next_request(api: Api, owner: Persona) -> None:
    assert api.post("/whoami", owner).status_code == 200
    assert owner.token is not None
    token_rotate(actor=Actor.system(), token=owner.token)
    assert error_code(api.post("/whoami", owner)) == "TOKEN_REVOKED"


def test_a_cached_token_of_a_user_deactivated_is_refused(api: Api, owner: Persona, alice: Any) -> None:
    assert api.post("/whoami", owner).status_code == 200
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert error_code(api.post("/whoami", owner)) == "TOKEN_INVALID"


def test_a_cached_token_is_refused_once_it_expires(api: Api, alice: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    persona = issue(alice, "short", expires_at=timezone.now() + timedelta(hours=1))
    assert api.post("/whoami", persona).status_code == 200
    later = timezone.now() + timedelta(hours=2)
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert error_code(api.post("/whoami", persona)) == "TOKEN_EXPIRED"


def test_a_partition_created_after_caching_is_reachable_on_the_next_request(api: Api, owner: Persona) -> None:
    workspace = {"x-memory-access-scope": "workspace"}
    assert api.post("/whoami", owner, headers=workspace).json()["access"]["readPartitionKeys"] == ["memory:personal"]
    assert owner.user is not None
    partition_create(access=access_for_user(user=owner.user), key="project:apollo", label="Apollo")
    body = api.post("/whoami", owner, {"partitionKey": "project:apollo"}).json()
    assert body["access"]["partitionKey"] == "project:apollo"
    keys = api.post("/whoami", owner, headers=workspace).json()["access"]["readPartitionKeys"]
    assert keys == ["memory:personal", "project:apollo"]


def test_a_partition_deactivated_after_caching_leaves_workspace_reads(api: Api, owner: Persona) -> None:
    assert owner.user is not None
    partition_create(access=access_for_user(user=owner.user), key="project:apollo", label="Apollo")
    workspace = {"x-memory-access-scope": "workspace"}
    assert "project:apollo" in api.post("/whoami", owner, headers=workspace).json()["access"]["readPartitionKeys"]
    partition_deactivate(access=access_for_user(user=owner.user), key="project:apollo")
    assert api.post("/whoami", owner, headers=workspace).json()["access"]["readPartitionKeys"] == ["memory:personal"]
    response = api.post("/scratchpad/write", owner, {"content": "plan", "partitionKey": "project:apollo"})
    assert error_code(response) == "PARTITION_INACTIVE"


def test_a_token_narrowed_after_caching_is_narrowed_on_the_next_request(api: Api, owner: Persona) -> None:
    assert owner.user is not None and owner.token is not None
    partition_create(access=access_for_user(user=owner.user), key="project:apollo", label="Apollo")
    assert api.post("/whoami", owner, {"partitionKey": "project:apollo"}).status_code == 200
    token = AccessToken.objects.get(pk=owner.token.pk)
    token.partition_keys = ["memory:personal"]
    token.save(update_fields=["partition_keys"])  # as the admin's change form does
    assert error_code(api.post("/whoami", owner, {"partitionKey": "project:apollo"})) == "NOT_FOUND"


def test_a_lost_generation_is_never_taken_for_the_old_one(api: Api, owner: Persona) -> None:
    """Redis flushed (or restarted empty) after a revocation: the cached token is not trusted again."""
    assert api.post("/whoami", owner).status_code == 200
    assert owner.token is not None
    AccessToken.objects.filter(pk=owner.token.pk).update(revoked_at=timezone.now())  # no signal: behind the cache
    cache.clear()
    assert error_code(api.post("/whoami", owner)) == "TOKEN_REVOKED"


def test_a_full_queue_makes_the_caller_write_its_own_row(alice: Any) -> None:
    writer = ToolEventWriter(capacity=2, batch=10, interval_s=3600)
    writer._thread = object()  # type: ignore[assignment]  # no background thread: this test flushes
    events = [_event(alice, tool) for tool in ("a", "b", "c")]
    for event in events:
        writer.add(event)
    assert list(ToolEvent.objects.values_list("tool", flat=True)) == ["c"]  # the one past the bound, at once
    assert writer.pending() == 2
    writer.flush()
    assert sorted(ToolEvent.objects.values_list("tool", flat=True)) == ["a", "b", "c"]


@pytest.mark.django_db(transaction=True)  # committed rows: the foreign keys are checked as in production
def test_a_queued_row_of_a_token_deleted_since_is_kept_without_it(alice: Any) -> None:
    persona = issue(alice, "gone", scopes=[Scope.READ])
    writer = ToolEventWriter(capacity=10, batch=10, interval_s=3600)
    writer._thread = object()  # type: ignore[assignment]
    writer.add(_event(alice, "kept", token=persona.token))
    writer.add(_event(alice, "also-kept"))
    AccessToken.objects.filter(pk=persona.token.pk).delete()  # type: ignore[union-attr]
    writer.flush()
    assert set(ToolEvent.objects.values_list("tool", "token")) == {("kept", None), ("also-kept", None)}


def _event(owner: Any, tool: str, token: AccessToken | None = None) -> ToolEvent:
    return ToolEvent(owner=owner, token=token, surface="rest", tool=tool, partition_key="memory:personal",
                     status_code=200, outcome="ok", duration_ms=1, created_at=timezone.now())  # fmt: skip


def test_partitions_are_not_shared_between_calls(api: Api, owner: Persona) -> None:
    """Each call gets its own copies of what the process keeps: a change made to one never reaches the next."""
    api.post("/whoami", owner)
    assert owner.token is not None
    from memory.access import access_for_token
    from memory.services.tokens import token_for_secret

    token = token_for_secret(owner.secret)
    access = access_for_token(token=token, user_id=None, partition_key=None, workspace=False)
    assert access.partition is not None
    access.partition.label = "changed in one call"
    again = access_for_token(token=token_for_secret(owner.secret), user_id=None, partition_key=None, workspace=False)
    assert again.partition is not None and again.partition.label != "changed in one call"
    assert Partition.objects.get(pk=again.partition.pk).label == again.partition.label


@pytest.mark.django_db(transaction=True)  # call_tool hands its connection back as the web process does
def test_a_warmed_mcp_call_asks_the_database_only_for_its_work_and_its_event_row(alice: Any) -> None:
    from mcp_bridge.calls import Caller, call_tool
    from mcp_bridge.catalog import tool_named
    from memory.models import ToolProfile

    persona = issue(alice, "mcp", scopes=Scope.values, profile=ToolProfile.FULL)
    assert persona.token is not None
    spec, caller = tool_named("read_scratchpad"), Caller(token_id=persona.token.pk)
    assert spec is not None and not call_tool(spec, {}, caller).is_error
    with CaptureQueriesContext(connection) as second:
        outcome = call_tool(spec, {}, caller)
    assert not outcome.is_error and outcome.text.startswith("{")
    tables = _tables(second)
    assert "memory_accesstoken" not in tables and "memory_partition" not in tables, tables
    assert tables.count("memory_toolevent") == 1

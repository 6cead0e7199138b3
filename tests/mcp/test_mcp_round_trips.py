"""What an MCP call over /mcp costs besides its tool: the token is checked once per HTTP request, with the call
counted in its rate window in the same Redis round trip, and tools/list answers from that same check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.cache import cache

from memory.models import ToolProfile, User
from tests.conftest import Persona
from tests.mcp.conftest import McpService, call, mcp_persona, rest, rpc


def _redis_scripts(run: Callable[[], Any]) -> int:
    """How many Lua scripts (the credentials gate: generation and rate window) Redis ran during `run`."""
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    redis.config_resetstat()
    run()
    stats = redis.info("commandstats")
    return sum(stats.get(name, {}).get("calls", 0) for name in ("cmdstat_evalsha", "cmdstat_eval"))


def test_a_tool_call_checks_its_token_and_counts_the_call_in_one_redis_round_trip(
    mcp_service: McpService, mcp_owner: Persona
) -> None:
    assert not call(mcp_service, mcp_owner, "read_scratchpad").is_error  # the server knows the token from here on
    answers = []
    assert _redis_scripts(lambda: answers.append(call(mcp_service, mcp_owner, "read_scratchpad"))) == 1
    assert not answers[0].is_error


def test_listing_tools_and_initializing_do_not_count_against_the_rate_limit(
    mcp_service: McpService, transactional_db: None, alice: User
) -> None:
    limited = mcp_persona(alice, "limited", rate_limit_per_minute=2)
    for _ in range(3):
        assert rpc(mcp_service, limited, "tools/list").status_code == 200
    answers = [call(mcp_service, limited, "read_scratchpad") for _ in range(3)]
    assert [answer.is_error for answer in answers] == [False, False, True]
    assert answers[2].code == "RATE_LIMITED"


def test_tools_list_follows_a_profile_changed_by_another_process(
    mcp_service: McpService, transactional_db: None, alice: User
) -> None:
    persona = mcp_persona(alice, "narrowed", profile=ToolProfile.FULL)

    def listed() -> set[str]:
        response = rpc(mcp_service, persona, "tools/list")
        assert response.status_code == 200, response.text
        return {tool["name"] for tool in response.json()["result"]["tools"]}

    assert {"memory_save", "search_memory"} <= listed()
    assert persona.token is not None
    persona.token.profile = ToolProfile.ASSISTANT
    persona.token.save(update_fields=["profile"])
    names = listed()
    assert "search_memory" in names and "memory_save" not in names


def test_requests_reuse_the_services_redis_connections(mcp_service: McpService, mcp_owner: Persona) -> None:
    # Under ASGI each request is a context of its own, and Django's cache handler builds a backend per context:
    # every search's first cache lookup used to open a new Redis connection (connect and HELLO, ~2 ms).
    redis = cache._cache.get_client(write=True)  # type: ignore[attr-defined]

    def search(query: str) -> None:
        assert rest(mcp_service, mcp_owner, "/query/search", {"query": query})["searchResults"] == []

    search("warm the service up")
    assert not call(mcp_service, mcp_owner, "search_memory", {"query": "warm the tool up"}).is_error
    before = redis.info("stats")["total_connections_received"]
    for number in range(5):
        search(f"what did I plan for week {number}")
        assert not call(mcp_service, mcp_owner, "search_memory", {"query": f"plans for week {number}"}).is_error
    assert redis.info("stats")["total_connections_received"] - before <= 1

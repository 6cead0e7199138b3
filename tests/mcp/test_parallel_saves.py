"""Parallel saves of one key over real HTTP (REST and MCP, the server in its own process): one current
value, every revision in the history, every ack read back after its commit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from memory.models import Claim
from tests.conftest import Persona
from tests.mcp.conftest import McpService, call, rest

PARALLEL = 20


def _active_and_history(key: str) -> tuple[int, list[Any]]:
    revisions = list(Claim.objects.filter(key=key).order_by("recorded_at", "id"))
    return sum(claim.status == "active" for claim in revisions), [claim.value for claim in revisions]


def test_parallel_rest_saves_of_a_new_key_leave_one_current_value(mcp_service: McpService, mcp_owner: Persona) -> None:
    with ThreadPoolExecutor(PARALLEL) as pool:
        acks = list(
            pool.map(
                lambda n: rest(mcp_service, mcp_owner, "/memory/save", {"key": "race", "value": f"v{n}"}),
                range(PARALLEL),
            )
        )
    assert all(ack["verified_persisted"] for ack in acks)
    active, values = _active_and_history("race")
    assert active == 1
    assert sorted(values) == sorted(f"v{n}" for n in range(PARALLEL))


def test_parallel_mcp_saves_to_an_existing_key_keep_every_revision(mcp_service: McpService, mcp_owner: Persona) -> None:
    rest(mcp_service, mcp_owner, "/memory/save", {"key": "race", "value": "first"})

    def save(n: int) -> Any:
        answer = call(mcp_service, mcp_owner, "memory_save", {"key": "race", "value": f"v{n}"})
        assert not answer.is_error, answer.payload
        return answer.payload

    with ThreadPoolExecutor(PARALLEL) as pool:
        acks = list(pool.map(save, range(PARALLEL)))
    assert all(ack["verified_persisted"] for ack in acks)
    active, values = _active_and_history("race")
    assert active == 1
    assert sorted(values) == sorted(["first", *(f"v{n}" for n in range(PARALLEL))])
    current = rest(mcp_service, mcp_owner, "/memory/get", {"key": "race"})["memory"]
    assert current["id"] == Claim.objects.get(key="race", status="active").pk

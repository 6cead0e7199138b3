"""A change made through an MCP tool is recorded with the MCP surface (the real server, over HTTP)."""

from __future__ import annotations

import pytest

from memory.models import ChangeSurface, MemoryEvent
from tests.conftest import Persona
from tests.mcp.conftest import McpService, call

pytestmark = pytest.mark.django_db(transaction=True)


def test_memory_save_through_mcp_records_mcp(mcp_service: McpService, mcp_owner: Persona) -> None:
    answer = call(mcp_service, mcp_owner, "memory_save", {"key": "coord/db", "value": "PostgreSQL 18"})
    assert not answer.is_error, answer.payload
    event = MemoryEvent.objects.get(action="memory.save", owner=mcp_owner.user)
    assert event.surface == ChangeSurface.MCP
    assert event.actor_token_id == mcp_owner.token.pk  # type: ignore[union-attr]

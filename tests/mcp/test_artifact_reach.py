"""artifact_list / artifact_get follow the partition an artifact was put through, over MCP as over REST."""

from __future__ import annotations

import pytest

from memory.models import Partition, User
from tests.conftest import Persona
from tests.mcp.conftest import McpService, call, mcp_persona

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_token_limited_to_one_namespace_cannot_list_or_read_anothers_artifact(
    mcp_service: McpService, mcp_owner: Persona, alice: User
) -> None:
    for key in ("project:a", "project:b"):
        Partition.objects.create(owner=alice, key=key, label=key)
    put = call(mcp_service, mcp_owner, "artifact_put", {"content": "plan for a", "namespace": "project:a"})
    assert not put.is_error, put.payload
    sha = put.payload["sha256"]
    only_b = mcp_persona(alice, "only b", partition_keys=["project:b"], default_partition_key="project:b")
    only_a = mcp_persona(alice, "only a", partition_keys=["project:a"], default_partition_key="project:a")

    assert call(mcp_service, only_b, "artifact_list").payload["artifacts"] == []
    refused = call(mcp_service, only_b, "artifact_get", {"sha256": sha})
    assert (refused.is_error, refused.code) == (True, "NOT_FOUND")
    assert [a["sha256"] for a in call(mcp_service, only_a, "artifact_list").payload["artifacts"]] == [sha]
    assert call(mcp_service, only_a, "artifact_get", {"sha256": sha}).payload["content"] == "plan for a"

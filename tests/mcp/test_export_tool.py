"""export_memory over MCP (real HTTP): the archive is stored as an artifact that GET /artifact/<sha256> serves."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest

from memory.access import access_for_user
from memory.models import Blob, Scope, ToolProfile, User
from memory.services.memories import memory_save
from tests.conftest import Persona
from tests.mcp.conftest import McpService, call, headers_of, mcp_persona
from tests.memory.archive_samples import archive_members, rows

pytestmark = pytest.mark.django_db(transaction=True)


def fetched(service: McpService, persona: Persona, href: str) -> bytes:
    response = httpx.get(f"{service.url}{href}", headers=headers_of(persona), timeout=60)
    assert response.status_code == 200, response.text
    return response.content


def test_the_tool_stores_the_archive_as_an_artifact_that_is_served(
    mcp_service: McpService, mcp_owner: Persona, mcp_other: Persona, alice: User, bob: User
) -> None:
    memory_save(access=access_for_user(user=alice), key="editor", value="The editor of choice is Helix.")
    memory_save(access=access_for_user(user=bob), key="drink", value="Tea, always.")
    answer = call(mcp_service, mcp_owner, "export_memory")
    assert not answer.is_error, answer.payload
    assert answer.payload["href"] == f"/artifact/{answer.payload['sha256']}"
    assert answer.payload["mimeType"] == "application/x-tar"
    data = fetched(mcp_service, mcp_owner, answer.payload["href"])
    assert (len(data), hashlib.sha256(data).hexdigest()) == (answer.payload["size"], answer.payload["sha256"])
    members = archive_members(data)
    assert json.loads(members["manifest.json"])["user"]["username"] == "alice"
    assert [claim["key"] for claim in rows(members, "claims")] == ["editor"]
    assert Blob.objects.get(owner=alice, sha256=answer.payload["sha256"]).is_artifact
    # Bob's export holds his memory only, and alice's archive is not his to fetch.
    theirs = call(mcp_service, mcp_other, "export_memory")
    assert [claim["key"] for claim in rows(archive_members(fetched(mcp_service, mcp_other, theirs.payload["href"])),
                                           "claims")] == ["drink"]  # fmt: skip
    refused = httpx.get(f"{mcp_service.url}{answer.payload['href']}", headers=headers_of(mcp_other), timeout=60)
    assert refused.status_code == 404


def test_the_tool_is_listed_only_in_the_full_profile_and_needs_maintenance(
    mcp_service: McpService, transactional_db: None, alice: User
) -> None:
    for profile, listed in ((ToolProfile.ASSISTANT, False), (ToolProfile.AGENT, False), (ToolProfile.FULL, True)):
        persona = mcp_persona(alice, f"list-{profile}", profile=profile)
        response = httpx.post(
            f"{mcp_service.url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers=headers_of(persona),
            timeout=60,
        )
        names = [tool["name"] for tool in response.json()["result"]["tools"]]
        assert ("export_memory" in names) is listed
    writer = mcp_persona(alice, "writer", scopes=[Scope.READ, Scope.WRITE])
    refused = call(mcp_service, writer, "export_memory")
    assert (refused.is_error, refused.code) == (True, "SCOPE_REQUIRED")
    unknown = call(mcp_service, mcp_persona(alice, "full"), "export_memory", {"partition": "nowhere"})
    assert (unknown.is_error, unknown.code) == (True, "NOT_FOUND")
    bad = call(mcp_service, mcp_persona(alice, "full2"), "export_memory", {"partition": ["x"], "extra": 1})
    assert (bad.is_error, bad.code) == (True, "VALIDATION_ERROR")
    assert not Blob.objects.filter(owner=alice).exists()


def test_the_rest_export_streams_over_real_http(mcp_service: McpService, mcp_owner: Persona, alice: User) -> None:
    """Under ASGI the archive goes out piece by piece (chunked, no Content-Length), not read whole first."""
    memory_save(access=access_for_user(user=alice), key="editor", value="The editor of choice is Helix.")
    with httpx.stream(
        "POST", f"{mcp_service.url}/maintenance/export", json={}, headers=headers_of(mcp_owner), timeout=60
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/x-tar"
        assert "content-length" not in response.headers and response.headers["transfer-encoding"] == "chunked"
        data = b"".join(response.iter_bytes())
    assert [claim["key"] for claim in rows(archive_members(data), "claims")] == ["editor"]


def test_an_artifact_streams_over_real_http_whole_or_a_range(mcp_service: McpService, mcp_owner: Persona) -> None:
    """GET /artifact/<sha256> under ASGI reads the file piece by piece (Django warns when it has to read a
    synchronous iterator whole first; that warning must not appear)."""
    data = bytes(range(256)) * 12_000  # 3 MB, several 256 KB pieces
    logged_before = mcp_service.log.stat().st_size  # the log is appended to across runs on one data directory
    binary = {**headers_of(mcp_owner), "Content-Type": "application/octet-stream"}
    put = httpx.put(f"{mcp_service.url}/artifact", content=data, headers=binary, timeout=60)
    assert put.status_code in (200, 201), put.text
    href = f"/artifact/{hashlib.sha256(data).hexdigest()}"
    with httpx.stream("GET", f"{mcp_service.url}{href}", headers=headers_of(mcp_owner), timeout=60) as response:
        assert (response.status_code, response.headers["content-length"]) == (200, str(len(data)))
        assert b"".join(response.iter_bytes()) == data
    ranged = httpx.get(f"{mcp_service.url}{href}", headers={**headers_of(mcp_owner), "Range": "bytes=10-19"})
    assert (ranged.status_code, ranged.content) == (206, data[10:20])
    assert b"synchronous iterators" not in mcp_service.log.read_bytes()[logged_before:]

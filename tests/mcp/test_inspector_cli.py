"""The npm `@modelcontextprotocol/inspector-cli` against the real server, over `/mcp` and `/sse`.

The CLI is pinned in `tools/inspector/` and installed by `make inspector` (a prerequisite of `make test`). It
is a third-party client: if it can list and call our tools, so can the clients built on the same TypeScript SDK.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from memory.screening import wrap_untrusted
from tests.conftest import Persona
from tests.mcp.conftest import McpService
from tests.process import ROOT

INSPECTOR = ROOT / "tools" / "inspector"
CLI = INSPECTOR / "node_modules" / ".bin" / "mcp-inspector-cli"
# The CLI reads its own version from `../package.json` *relative to its working directory* (and crashes when
# that file is missing): from `node_modules/`, the parent is our tools/inspector/package.json.
CLI_CWD = INSPECTOR / "node_modules"
ENDPOINTS = {"http": "/mcp", "sse": "/sse"}
TIMEOUT = 90  # seconds; a call takes about one

# Marks, not pytest.skip() in the test: they skip before the session starts the server for nothing.
pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(
        shutil.which("node") is None,
        reason="Node.js is not installed: the inspector CLI test needs it (make inspector installs the CLI)",
    ),
    pytest.mark.skipif(
        not CLI.exists(), reason=f"The inspector CLI is not installed at {CLI.relative_to(ROOT)}: run `make inspector`"
    ),
]


def inspect(service: McpService, persona: Persona, transport: str, method: str, *options: str) -> Any:
    """Run the CLI once (connect, initialize, one method, disconnect) and parse the JSON it prints."""
    command = [
        str(CLI), "--cli", f"{service.url}{ENDPOINTS[transport]}", "--transport", transport,
        "--header", f"Authorization: Bearer {persona.secret}", "--method", method, *options,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=CLI_CWD, capture_output=True, text=True, timeout=TIMEOUT)
    shown = " ".join(command).replace(persona.secret, "<secret>")
    assert done.returncode == 0, f"{shown}\nexit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return json.loads(done.stdout)


def call_tool(service: McpService, persona: Persona, transport: str, tool: str, **arguments: str) -> Any:
    """`tools/call` through the CLI; the JSON the tool answered."""
    pairs = [option for name, value in arguments.items() for option in ("--tool-arg", f"{name}={value}")]
    result = inspect(service, persona, transport, "tools/call", "--tool-name", tool, *pairs)
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])


@pytest.mark.parametrize("transport", ENDPOINTS)
def test_inspector_cli_lists_the_tools(mcp_service: McpService, mcp_owner: Persona, transport: str) -> None:
    listed = inspect(mcp_service, mcp_owner, transport, "tools/list")

    names = {tool["name"] for tool in listed["tools"]}
    assert {"save_memory", "search_memory", "list_open_commitments", "memory_save", "memory_get"} <= names
    assert all(tool["inputSchema"]["type"] == "object" for tool in listed["tools"])


@pytest.mark.parametrize("transport", ENDPOINTS)
def test_inspector_cli_saves_a_memory_and_reads_it_back(
    mcp_service: McpService, mcp_owner: Persona, transport: str
) -> None:
    key, value = f"inspector.{transport}.db", f"PostgreSQL 18 via {transport}"

    saved = call_tool(mcp_service, mcp_owner, transport, "memory_save", key=key, value=value)
    read = call_tool(mcp_service, mcp_owner, transport, "memory_get", key=key)

    assert saved["key"] == key and saved["verified_persisted"] and not saved["quarantined"]
    assert read["memory"]["key"] == key
    assert read["memory"]["value"] == wrap_untrusted(value)

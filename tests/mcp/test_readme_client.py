"""What MCP clients are told about the server, and the README's Python client example run as printed
(issue 12, item 17)."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import anyio
import pytest

from memory.models import User
from tests.conftest import Persona
from tests.mcp.conftest import McpService, mcp_persona, sdk_session
from tests.process import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def project_version() -> str:
    found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert found is not None
    return found.group(1)


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_the_server_reports_the_project_version_on_initialize(
    mcp_service: McpService, mcp_owner: Persona, transport: str
) -> None:
    async def scenario() -> Any:
        async with sdk_session(mcp_service.url, mcp_owner, transport) as session:
            return await session.initialize()  # the session keeps the initialize result it was given

    result = anyio.run(scenario)

    assert (result.server_info.name, result.server_info.version) == ("memory", project_version())


def readme_python_example() -> str:
    """The one ```python block of the README's "Python" client section."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("**Python (MCP SDK", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the README lost its Python client example"
    return match.group(1)


def test_the_readme_python_client_example_runs_against_the_server(
    mcp_service: McpService, transactional_db: None, alice: User
) -> None:
    persona = mcp_persona(alice, "readme example", profile="assistant")
    env = {"PATH": "/usr/bin:/bin", "MEMORY_TOKEN": persona.secret, "MEMORY_MCP_URL": f"{mcp_service.url}/mcp"}

    done = subprocess.run(
        [sys.executable, "-c", readme_python_example()], env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"memory {project_version()}"
    assert "search_memory" in lines[1]
    assert "assistant_memory" in done.stdout  # the search answered its prompt-ready formattedResult

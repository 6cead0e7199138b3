"""Fixtures of the maintenance tests: the real MCP server of tests/mcp (uvicorn on a loopback port) and its
personas, for the maintenance tools."""

from __future__ import annotations

from tests.mcp.conftest import mcp_other, mcp_owner, mcp_service

__all__ = ["mcp_other", "mcp_owner", "mcp_service"]

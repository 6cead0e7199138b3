"""Which paths belong to the MCP transports: known without importing the MCP SDK (config.asgi routes on it)."""

from __future__ import annotations

MCP_PATHS = ("/mcp", "/sse", "/messages")


def is_mcp_path(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in MCP_PATHS)

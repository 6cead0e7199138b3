"""Whether this service has served MCP: a web process builds its MCP transports right after start only then
(config.asgi.LazyMcpTransports). Kept in Redis (memory.uses), so every web process of a fleet knows; importing this
module does not import the MCP SDK."""

from __future__ import annotations

from memory.uses import use_note, used_before

SERVED_KEY = "mcp:served"


def mcp_served_before() -> bool:
    """Whether any web process of this service has had an MCP request. True when Redis cannot say: then building, as
    every process did before, is the safe side."""
    return used_before(SERVED_KEY, unknown=True)


def mcp_served_note() -> None:
    """Remember that this service serves MCP."""
    use_note(SERVED_KEY)

"""The MCP server: tool registry by profile, transports, auth middleware, stdio command (SPEC §9)."""

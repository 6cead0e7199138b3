from __future__ import annotations

from django.apps import AppConfig


class McpBridgeConfig(AppConfig):
    name = "mcp_bridge"

"""Websocket routes (live processing progress arrives with the ingestion pipeline)."""

from __future__ import annotations

from typing import Any

websocket_urlpatterns: list[Any] = []

"""Websocket: live processing events for the signed-in owner only."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from memory.pipeline.progress import owner_group

UNAUTHENTICATED = 4401


class EventsConsumer(AsyncJsonWebsocketConsumer):
    """`/ws/events/`: refuses anonymous connections; delivers only events tagged with the user's own id."""

    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        self.group = owner_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def memory_event(self, event: dict[str, Any]) -> None:
        if event.get("owner_id") == self.scope["user"].pk:
            await self.send_json(event["payload"])

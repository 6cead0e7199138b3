"""Live progress over websockets: anonymous connections are refused; each owner hears only their events."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth.models import AnonymousUser

from memory.consumers import UNAUTHENTICATED, EventsConsumer
from memory.models import Operation, User
from memory.pipeline.progress import publish_progress

pytestmark = pytest.mark.django_db


def receipt_for(user: User) -> Operation:
    return Operation(id="op_test", owner=user, owner_id=user.pk, source_version=1, status="processing", step="embed")


class Socket:
    """A websocket client speaking raw ASGI to the consumer (channels.testing needs daphne)."""

    def __init__(self, user: object) -> None:
        scope = {"type": "websocket", "path": "/ws/events/", "headers": [], "subprotocols": [], "user": user}
        self.communicator = ApplicationCommunicator(EventsConsumer.as_asgi(), scope)

    async def connect(self) -> dict:
        await self.communicator.send_input({"type": "websocket.connect"})
        return await self.communicator.receive_output(timeout=2)

    async def receive_json(self) -> dict:
        message = await self.communicator.receive_output(timeout=5)
        return json.loads(message["text"])

    async def hears_nothing(self) -> bool:
        return await self.communicator.receive_nothing(timeout=0.5)

    async def close(self) -> None:
        await self.communicator.send_input({"type": "websocket.disconnect", "code": 1000})
        await self.communicator.wait(timeout=2)


def test_anonymous_connections_are_refused() -> None:
    async def scenario() -> dict:
        return await Socket(AnonymousUser()).connect()

    assert async_to_sync(scenario)() == {"type": "websocket.close", "code": UNAUTHENTICATED}


def test_the_owner_hears_their_progress_and_nobody_elses(alice, bob) -> None:
    async def scenario() -> tuple[dict, bool, bool]:
        alice_socket, bob_socket = Socket(alice), Socket(bob)
        assert (await alice_socket.connect())["type"] == "websocket.accept"
        assert (await bob_socket.connect())["type"] == "websocket.accept"
        await sync_to_async(publish_progress)(receipt_for(alice))
        event = await alice_socket.receive_json()
        bob_heard = not await bob_socket.hears_nothing()
        await sync_to_async(publish_progress)(receipt_for(bob))
        alice_heard_bob = not await alice_socket.hears_nothing()
        await alice_socket.close()
        await bob_socket.close()
        return event, bob_heard, alice_heard_bob

    event, bob_heard, alice_heard_bob = async_to_sync(scenario)()
    assert event["type"] == "operation.progress"
    assert (event["operationId"], event["status"], event["step"]) == ("op_test", "processing", "embed")
    assert bob_heard is False
    assert alice_heard_bob is False


def test_an_event_the_layer_cannot_send_is_logged_and_the_next_one_still_goes(
    alice, caplog: pytest.LogCaptureFixture
) -> None:
    from memory.pipeline import progress

    unsendable: Any = {"type": "source.processed", "sourceId": object(), "kind": "message", "partitionKey": "default"}

    async def scenario() -> dict:
        socket = Socket(alice)
        assert (await socket.connect())["type"] == "websocket.accept"
        await sync_to_async(progress._send)(alice.pk, unsendable)  # no encoding for it: refused by the layer
        await sync_to_async(publish_progress)(receipt_for(alice))
        event = await socket.receive_json()
        await socket.close()
        return event

    with caplog.at_level(logging.WARNING, logger="memory.progress"):
        event = async_to_sync(scenario)()
    assert event["operationId"] == "op_test"  # no pause after a failure of one event's own
    failures = [record for record in caplog.records if record.getMessage() == "progress.publish_failed"]
    assert [record.pausedSeconds for record in failures] == [0.0]  # type: ignore[attr-defined]

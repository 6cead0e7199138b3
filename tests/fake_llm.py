"""A small local stand-in for a remote OpenAI-compatible chat endpoint (the only kind of fake we allow: a paid
remote API). It serves whatever the test queues: a canned completion, malformed JSON, an HTTP error, a cut-off
answer, or silence past the client's timeout, and it records every request it was sent."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.local_http import JsonHandler, serving


@dataclass
class Reply:
    content: str = ""  # the completion's message content
    status: int = 200
    finish_reason: str = "stop"
    delay_s: float = 0.0
    raw: bytes | None = None  # the whole response body instead of a chat completion


@dataclass
class FakeLLM:
    url: str
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    # Called on the server's thread while a request is open, before it is answered (one per request).
    during: list[Callable[[], None]] = field(default_factory=list)

    def answer(self, payload: dict[str, Any]) -> None:
        self.replies.append(Reply(content=json.dumps(payload)))

    def prompt(self, index: int = -1) -> dict[str, Any]:
        """The JSON payload of a recorded request's user message, without the untrusted-data wrapper."""
        content = self.requests[index]["messages"][1]["content"]
        return dict(json.loads(content.split("\n", 1)[1].rsplit("\n", 1)[0]))


def completion(content: str, finish_reason: str) -> bytes:
    return json.dumps({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
    }).encode()  # fmt: skip


@contextmanager
def fake_llm() -> Iterator[FakeLLM]:
    state = FakeLLM(url="")

    class Handler(JsonHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.requests.append(json.loads(body))
            state.headers.append(dict(self.headers))
            if state.during:
                state.during.pop(0)()
            reply = state.replies.pop(0) if state.replies else Reply(content='{"claims": []}', status=500)
            time.sleep(reply.delay_s)
            data = reply.raw if reply.raw is not None else completion(reply.content, reply.finish_reason)
            self.send_json(reply.status, data)

    with serving(Handler) as base:
        state.url = f"{base}/v1"
        yield state

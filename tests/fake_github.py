"""A small local stand-in for the GitHub REST API (a remote API: the only kind of fake we allow). It answers the
routes a test sets (path -> status and JSON, or raw bytes), 404 for anything else, optionally after a delay,
and records every request with its headers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from tests.local_http import JsonHandler, serving


@dataclass
class Route:
    status: int = 200
    body: Any = None
    raw: bytes | None = None  # the whole response body instead of JSON


@dataclass
class FakeGitHub:
    url: str
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    delay_s: float = 0.0

    def pull(self, repo: str, number: int, *, state: str, merged: bool) -> None:
        merged_at = "2026-01-05T10:00:00Z" if merged else None
        self.routes[f"/repos/{repo}/pulls/{number}"] = Route(
            body={"number": number, "state": state, "merged": merged, "merged_at": merged_at}
        )

    def branch(self, repo: str, name: str, sha: str) -> None:
        self.routes[f"/repos/{repo}/branches/{name}"] = Route(body={"name": name, "commit": {"sha": sha}})

    def repo(self, repo: str) -> None:
        self.routes[f"/repos/{repo}"] = Route(body={"full_name": repo})

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


@contextmanager
def fake_github() -> Iterator[FakeGitHub]:
    state = FakeGitHub(url="")

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            state.requests.append((path, dict(self.headers)))
            route = state.routes.get(path, Route(status=404, body={"message": "Not Found"}))
            time.sleep(state.delay_s)
            data = route.raw if route.raw is not None else json.dumps(route.body).encode()
            self.send_json(route.status, data)

    with serving(Handler) as base:
        state.url = base
        yield state

"""Outages of Redis and PostgreSQL, as a client sees them over real HTTP: a write that succeeded is
acknowledged, a missing backing service is a 503 SERVICE_UNAVAILABLE in the error shape, never a 500."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from channels.layers import get_channel_layer
from django.db import connection

from config.embedded import Runtime, _Redis
from memory.models import Chunk, Claim, RedisDebt, Source, User
from memory.pipeline import progress
from memory.pipeline.runner import run_operation
from tests.conftest import Persona, error_code
from tests.factories import ClaimFactory
from tests.process import ROOT, child_env, free_port, service_env, stop, wait_for

pytestmark = pytest.mark.server


class Server:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(self.port), "--lifespan", "on"],
            cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
        )  # fmt: skip

    def post(self, path: str, persona: Persona | None, body: object = None, **headers: str) -> httpx.Response:
        sent = {**(persona.headers if persona else {}), **headers}
        return httpx.post(f"{self.url}{path}", json=body or {}, headers=sent, timeout=60)

    def stop(self) -> None:
        stop(self.process)


def within(seconds: float, done: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.2)
    return done()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[_Redis]:
    """A Redis of this test's own, so stopping it leaves the suite's Redis alone."""
    redis = _Redis(Runtime(tmp_path / "redis", postgres=False, redis=True))
    redis.ensure_running()
    yield redis
    pidfile = redis.runtime.redis_dir / "redis.pid"
    if pidfile.exists():  # a test that stopped it with SIGSTOP and did not get to continue it
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pidfile.read_text()), signal.SIGCONT)
    redis.stop()


@pytest.mark.django_db(transaction=True)
def test_a_memory_saved_while_redis_is_down_is_acknowledged_kept_and_readable(
    owner: Persona, own_redis: _Redis, tmp_path: Path
) -> None:
    env = child_env(connection.settings_dict["NAME"], REDIS_URL=own_redis.runtime.redis_url())
    server = Server(env, tmp_path / "server.log")
    try:
        wait_for(f"{server.url}/healthz", until='"redis": "ok"')
        turns = [{"id": f"m{n}", "role": "user", "content": text} for n, text in enumerate(["Code 4417.", "Noted."])]
        chat = server.post("/ingest/conversation", owner, {"conversation": {"id": "chat", "messages": turns}}).json()
        run_operation(chat["operationId"])
        own_redis.stop()
        saved = server.post("/memory/save", owner, {"key": "editor", "value": "helix", "eventId": "evt-redis-down"})
        assert saved.status_code == 200, saved.text
        assert Claim.objects.filter(key="editor", status="active").count() == 1  # the write was kept
        read = server.post("/memory/get", owner, {"key": "editor"})
        assert read.status_code == 200, read.text
        searched = server.post("/memory/search", owner, {"query": "editor"})
        assert searched.status_code == 200, searched.text
        ingested = server.post(
            "/ingest/document", owner, {"document": {"id": "doc-redis-down", "content": "Kept while Redis was down."}}
        )
        assert ingested.status_code == 202, ingested.text
        # Erasing a turn sends a job for the vectors of the turns after it; with the queue down it still erases
        # (the sweep makes those vectors later).
        turn = Source.objects.get(kind="message", message_id="m0")
        erased = server.post("/source/delete", owner, {"sourceId": turn.pk})
        assert erased.status_code == 200, erased.text
        assert not Source.objects.filter(pk=turn.pk).exists()
        assert Chunk.objects.get(source__message_id="m1").embedding is None
        assert "embeddings.dispatch_failed" in (tmp_path / "server.log").read_text()  # the send was tried, and failed
    finally:
        server.stop()


def test_rest_and_mcp_answer_503_in_the_error_shape_while_the_database_is_down(tmp_path: Path) -> None:
    # Nothing listens at this address: the database is down for this server from the start.
    env = service_env(
        tmp_path / "data", 0, DATABASE_URL=f"postgresql://postgres@/memory?host={tmp_path}", SECRET_KEY="test-only"
    )
    server = Server(env, tmp_path / "server.log")
    bearer = {"Authorization": "Bearer mem_" + "a" * 40}
    try:
        wait_for(f"{server.url}/healthz")
        for _ in range(2):  # the first request meets the outage, the next one knows about it
            whoami = server.post("/whoami", None, **bearer)
            assert whoami.status_code == 503, whoami.text
            assert error_code(whoami) == "SERVICE_UNAVAILABLE"
            mcp = server.post(
                "/mcp",
                None,
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                **bearer,
                Accept="application/json, text/event-stream",
            )
            assert mcp.status_code == 503, mcp.text
            assert error_code(mcp) == "SERVICE_UNAVAILABLE"
    finally:
        server.stop()


def test_live_progress_with_redis_hung_waits_once_and_nothing_arrives_late(
    own_redis: _Redis, settings: object, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis that takes connections and never answers (stopped with SIGSTOP): the first event waits out its
    timeout, the next ones of the pause are not tried, and the one that timed out is dropped, never delivered after
    Redis answers again (behind what was sent since)."""
    settings.CHANNEL_LAYERS = {  # type: ignore[attr-defined]
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                    "CONFIG": {"hosts": [{"address": own_redis.runtime.redis_url()}], "prefix": "outage"}},
    }  # fmt: skip
    events = progress._EventLoop()  # this test's layer, on a loop of its own
    monkeypatch.setattr(progress, "_events", events)
    monkeypatch.setattr(progress, "SEND_TIMEOUT_S", 1.0)
    layer = get_channel_layer()
    assert layer is not None
    pid = int((own_redis.runtime.redis_dir / "redis.pid").read_text())

    def event(source_id: str) -> progress.SourceProcessed:
        return {"type": "source.processed", "sourceId": source_id, "kind": "message", "partitionKey": "default"}

    async def scenario() -> tuple[list[str], list[str], list[str]]:
        channel = await layer.new_channel()
        await layer.group_add(progress.owner_group(7), channel)

        async def received() -> list[str]:
            found: list[str] = []
            while True:
                try:
                    message = await asyncio.wait_for(layer.receive(channel), timeout=1)
                except TimeoutError:
                    return found
                found.append(message["payload"]["sourceId"])

        await asyncio.to_thread(progress._send, 7, event("before"))
        before = await received()
        os.kill(pid, signal.SIGSTOP)
        try:
            await asyncio.to_thread(progress._send, 7, event("hung-1"))
            await asyncio.to_thread(progress._send, 7, event("hung-2"))  # within the pause: not tried
        finally:
            os.kill(pid, signal.SIGCONT)
        late = await received()
        progress._events.quiet_until = 0.0  # the pause over
        await asyncio.to_thread(progress._send, 7, event("after"))
        return before, late, await received()

    try:
        with caplog.at_level(logging.WARNING, logger="memory.progress"), ThreadPoolExecutor(1) as apart:
            # On a loop of its own thread: a session's browser (Playwright's sync API, tests/web) leaves this thread
            # inside a running loop, where async_to_sync refuses to run.
            before, late, after = apart.submit(asyncio.run, scenario()).result()
    finally:
        events.stop()
    assert before == ["before"]
    failures = [record for record in caplog.records if record.getMessage() == "progress.publish_failed"]
    assert [(record.eventType, record.error) for record in failures] == [("source.processed", "TimeoutError")]  # type: ignore[attr-defined]
    assert late == []  # the send that timed out was cancelled, not delivered once Redis answered
    assert after == ["after"]


@pytest.mark.django_db(transaction=True)
def test_what_redis_missed_while_down_lands_once_it_answers(
    owner: Persona, alice: User, own_redis: _Redis, tmp_path: Path
) -> None:
    """A write and an erasure committed while Redis was down: once it is back, the atlas kept before them is neither
    served (the memory version moves on) nor left in Redis (the erasure's drop is done), not a day later."""
    helix, zed = (
        ClaimFactory.create(owner=alice, statement=statement, pinned=True)
        for statement in ("Helix is the editor.", "Zed is the backup editor.")
    )
    server = Server(child_env(connection.settings_dict["NAME"], REDIS_URL=own_redis.runtime.redis_url()),
                    tmp_path / "server.log")  # fmt: skip

    def atlas() -> str:
        response = server.post("/query/atlas", owner)
        assert response.status_code == 200, response.text
        return str(response.json()["atlas"])

    def atlases_kept() -> list[bytes]:
        client = own_redis._client()
        return [client.get(key) or b"" for key in client.scan_iter(match=f"*atlas:{alice.pk}:*")]

    try:
        wait_for(f"{server.url}/healthz", until='"redis": "ok"')
        assert "Zed" in atlas() and "Helix" in atlas()  # kept at the memory version
        own_redis.stop()
        assert server.post("/claim/retract", owner, {"claimId": zed.pk}).status_code == 200
        own_redis.ensure_running()
        assert within(30, lambda: "Zed" not in atlas()), atlas()
        own_redis.stop()
        assert server.post("/claim/delete", owner, {"claimId": helix.pk}).status_code == 200
        own_redis.ensure_running()
        assert within(30, lambda: not any(b"Helix" in kept for kept in atlases_kept()))
        assert "Helix" not in atlas()
        log = (tmp_path / "server.log").read_text()
        assert "audit.version_unavailable" in log and "erasure.cache_unavailable" in log
    finally:
        server.stop()


@pytest.mark.django_db(transaction=True)
def test_what_a_server_killed_while_redis_was_down_owed_is_done_by_the_next_one_to_start(
    owner: Persona, alice: User, own_redis: _Redis, tmp_path: Path
) -> None:
    """SIGKILL, so no last try: the retraction's change of version was written down (memory.services.redis_debts),
    and the next server settles it once it has started, rather than the atlas kept before it being served for a day."""
    ClaimFactory.create(owner=alice, statement="Helix is the editor.", pinned=True)
    zed = ClaimFactory.create(owner=alice, statement="Zed is the backup editor.", pinned=True)
    env = child_env(connection.settings_dict["NAME"], REDIS_URL=own_redis.runtime.redis_url())
    server = Server(env, tmp_path / "server.log")

    def atlas() -> str:
        response = server.post("/query/atlas", owner)
        assert response.status_code == 200, response.text
        return str(response.json()["atlas"])

    def written_down() -> bool:
        return RedisDebt.objects.filter(kind="memory-version", owner_id=alice.pk).exists()

    try:
        wait_for(f"{server.url}/healthz", until='"redis": "ok"')
        assert "Zed" in atlas()  # kept at the memory version
        own_redis.stop()
        assert server.post("/claim/retract", owner, {"claimId": zed.pk}).status_code == 200
        assert within(10, written_down)
    finally:
        server.process.kill()
        server.process.wait()
    own_redis.ensure_running()
    server = Server(env, tmp_path / "next-server.log")
    try:
        wait_for(f"{server.url}/healthz", until='"redis": "ok"')
        assert within(30, lambda: "Zed" not in atlas()), atlas()
        assert within(5, lambda: not written_down())  # deleted once its work is done
    finally:
        server.stop()


@pytest.mark.django_db(transaction=True)
def test_a_server_stopped_before_redis_is_back_tries_once_more_and_logs_what_it_lost(
    owner: Persona, alice: User, own_redis: _Redis, tmp_path: Path
) -> None:
    claim = ClaimFactory.create(owner=alice, statement="Helix is the editor.", pinned=True)
    log = tmp_path / "server.log"
    server = Server(child_env(connection.settings_dict["NAME"], REDIS_URL=own_redis.runtime.redis_url()), log)
    try:
        wait_for(f"{server.url}/healthz", until='"redis": "ok"')
        own_redis.stop()
        assert server.post("/claim/unpin", owner, {"claimId": claim.pk}).status_code == 200
    finally:
        server.stop()  # SIGTERM: uvicorn's lifespan shutdown, then it re-raises the signal before atexit runs
    assert '"redis_retry.lost"' in log.read_text()


@pytest.mark.django_db(transaction=True)
def test_while_redis_hangs_one_write_meets_it_and_the_jobs_not_sent_are_sent_once_it_answers(
    owner: Persona, alice: User, own_redis: _Redis, tmp_path: Path
) -> None:
    """A pause longer than AWAY_SECONDS: the first write that meets it waits out REDIS_TIMEOUT_S and starts the wait;
    the server's watcher keeps it until Redis answers (it used to end after AWAY_SECONDS, and the next write met the
    pause again). Once Redis answers, the server sends the receipts' jobs itself (beat's sweep used to, a minute or
    two later): each receipt has its job id."""
    from memory.models import Operation

    log = tmp_path / "server.log"
    env = child_env(connection.settings_dict["NAME"], REDIS_URL=own_redis.runtime.redis_url(), REDIS_TIMEOUT_S="1")
    server = Server(env, log)
    pid = int((own_redis.runtime.redis_dir / "redis.pid").read_text())
    receipts: list[str] = []
    try:
        wait_for(f"{server.url}/healthz", until='"redis": "ok"')
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            while time.monotonic() - started < 7:  # past AWAY_SECONDS (5)
                turn = {"id": f"m{len(receipts)}", "role": "user", "content": "Oskar pruned the quince tree."}
                ingested = server.post(
                    "/ingest/conversation", owner, {"conversation": {"id": f"c{len(receipts)}", "messages": [turn]}}
                )
                assert ingested.status_code == 202, ingested.text
                receipts.append(ingested.json()["operationId"])
                time.sleep(0.5)
        finally:
            os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 30
        while Operation.objects.filter(pk__in=receipts, task_id="").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Operation.objects.filter(pk__in=receipts, task_id="").exists()
    finally:
        server.stop()
    written = log.read_text()
    assert written.count('"redis.away"') == 1 and written.count('"redis.answers"') == 1, written


@pytest.mark.django_db(transaction=True)
def test_a_write_that_sends_a_job_answers_while_redis_hangs(
    owner: Persona, alice: User, own_redis: _Redis, tmp_path: Path
) -> None:
    """A Redis that takes connections and never answers (stopped with SIGSTOP), as a failover or a half-open
    connection leaves it: the cache, the queue and the result backend give up on it (REDIS_TIMEOUT_S), so a saved
    memory, whose vector is sent as a job, is acknowledged and kept. Before, the job's send waited for ever, and with
    it the request (the client here gives up after 60 s: a hang, not a slow answer)."""
    log = tmp_path / "server.log"
    server = Server(child_env(connection.settings_dict["NAME"], REDIS_URL=own_redis.runtime.redis_url()), log)
    pid = int((own_redis.runtime.redis_dir / "redis.pid").read_text())
    try:
        wait_for(f"{server.url}/healthz", until='"redis": "ok"')
        assert server.post("/memory/save", owner, {"key": "editor", "value": "helix"}).status_code == 200
        os.kill(pid, signal.SIGSTOP)
        try:
            saved = server.post("/memory/save", owner, {"key": "editor", "value": "zed"})
        finally:
            os.kill(pid, signal.SIGCONT)
        assert saved.status_code == 200, saved.text
        assert Claim.objects.get(owner=alice, key="editor", status="active").value == "zed"
        assert "embeddings.dispatch_failed" in log.read_text()  # sent later by the sweep
    finally:
        server.stop()

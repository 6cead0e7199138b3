"""The web process makes its local query embedder ready right after start where this service has searched before
(memory.recall.warm_up, config.asgi.query_embedder); where it never has, no model is loaded until a search."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from django.core.cache import cache

import config.asgi
from config.asgi import WarmUp, application, query_embedder
from memory.access import access_for_user
from memory.models import User
from memory.recall import warm_up
from memory.recall.search import SearchRequest, search
from memory.recall.warm_up import SEARCHED_KEY, query_embedder_warmed
from memory.uses import used_before

T = TypeVar("T")


@pytest.fixture
def warm_up_on(settings: object) -> None:
    settings.QUERY_EMBEDDER_WARM_UP = True  # type: ignore[attr-defined]  # off for the servers other tests start


def on_a_loop_of_its_own(coroutine: Callable[[], Awaitable[T]]) -> T:
    """An earlier test of the session (the browser's) may leave this thread inside a running loop."""

    async def awaited() -> T:
        return await coroutine()

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, awaited()).result()


@pytest.mark.django_db
def test_a_search_notes_that_this_service_searches(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.delete(SEARCHED_KEY)
    monkeypatch.setattr(warm_up, "_noted_by", 0)  # this process has not searched yet
    search(access_for_user(user=alice), SearchRequest(query="Which cello?"))
    assert cache.get(SEARCHED_KEY) is not None  # the next start of any web process loads the embedder at once


@pytest.mark.django_db
def test_a_search_without_its_vector_leg_notes_nothing(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.delete(SEARCHED_KEY)
    monkeypatch.setattr(warm_up, "_noted_by", 0)
    search(access_for_user(user=alice), SearchRequest(query="Which cello?", use_vector=False))
    assert cache.get(SEARCHED_KEY) is None


def test_a_service_that_never_searched_loads_no_model_at_start(warm_up_on: None) -> None:
    cache.delete(SEARCHED_KEY)
    assert query_embedder_warmed() is False


def test_a_service_that_searched_before_loads_the_embedder_at_start(warm_up_on: None) -> None:
    cache.set(SEARCHED_KEY, 1, timeout=None)
    assert query_embedder_warmed() is True


def test_the_warm_up_can_be_turned_off(settings: object) -> None:
    settings.QUERY_EMBEDDER_WARM_UP = False  # type: ignore[attr-defined]
    cache.set(SEARCHED_KEY, 1, timeout=None)
    assert query_embedder_warmed() is False


def test_a_remote_embedder_is_not_called_at_start(warm_up_on: None, settings: object) -> None:
    settings.EMBEDDER = "openai"  # type: ignore[attr-defined]  # nothing of it stays warm; a call may cost
    settings.EMBEDDING_URL = "http://127.0.0.1:1/v1"  # type: ignore[attr-defined]  # refused, were it called
    cache.set(SEARCHED_KEY, 1, timeout=None)
    assert query_embedder_warmed() is False


def test_with_redis_away_the_embedder_is_not_loaded_and_the_mcp_transports_are(settings: object) -> None:
    settings.CACHES = {  # type: ignore[attr-defined]
        "default": {"BACKEND": "config.cache.SharedClientRedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    assert used_before(SEARCHED_KEY, unknown=False) is False
    assert used_before("mcp:served", unknown=True) is True


def test_a_warm_up_stopped_before_its_delay_never_runs() -> None:
    ran: list[str] = []

    async def job() -> bool:
        ran.append("ran")
        return True

    async def started_and_stopped() -> None:
        warming = WarmUp(job, "test")
        await warming.start()
        await warming.stop()

    on_a_loop_of_its_own(started_and_stopped)
    assert ran == []


def test_a_warm_up_that_fails_is_logged(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(config.asgi, "WARM_UP_AFTER_S", 0)

    async def job() -> bool:
        raise RuntimeError("the model file is damaged")

    async def started_and_done() -> None:
        warming = WarmUp(job, "query embedder")
        await warming.start()
        await asyncio.sleep(0.1)
        await warming.stop()

    with caplog.at_level(logging.ERROR, logger="memory.web"):
        on_a_loop_of_its_own(started_and_done)
    failed = [record for record in caplog.records if record.getMessage() == "web.warm_up_failed"]
    assert [record.job for record in failed] == ["query embedder"]  # type: ignore[attr-defined]


def test_the_web_process_starts_and_stops_the_warm_up_with_its_lifespan() -> None:
    assert query_embedder.start in application.on_startup
    assert query_embedder.stop in application.on_shutdown

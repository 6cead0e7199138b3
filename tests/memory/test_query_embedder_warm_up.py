"""The web process makes its query embedder ready right after start where this service has searched before
(memory.recall.warm_up, config.asgi.QueryEmbedderWarmUp); where it never has, no model is loaded until a search."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.cache import cache

from config.asgi import QueryEmbedderWarmUp, application, query_embedder
from memory.access import access_for_user
from memory.models import User
from memory.recall import warm_up
from memory.recall.search import SearchRequest, search
from memory.recall.warm_up import SEARCHED_KEY

pytestmark = pytest.mark.django_db


@pytest.fixture
def warm_up_on(settings: object) -> None:
    settings.QUERY_EMBEDDER_WARM_UP = True  # type: ignore[attr-defined]  # off for the servers other tests start


def warmed_up() -> bool:
    """The lifespan's warm-up on a loop of its own thread (an earlier test may leave one running on this one)."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, QueryEmbedderWarmUp().warm_up_if_searched()).result()


def test_a_search_notes_that_this_service_searches(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.delete(SEARCHED_KEY)
    monkeypatch.setattr(warm_up, "_noted_by", 0)  # this process has not searched yet
    search(access_for_user(user=alice), SearchRequest(query="Which cello?"))
    assert cache.get(SEARCHED_KEY) is not None  # the next start of any web process loads the embedder at once


def test_a_search_without_its_vector_leg_notes_nothing(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.delete(SEARCHED_KEY)
    monkeypatch.setattr(warm_up, "_noted_by", 0)
    search(access_for_user(user=alice), SearchRequest(query="Which cello?", use_vector=False))
    assert cache.get(SEARCHED_KEY) is None


def test_a_service_that_never_searched_loads_no_model_at_start(warm_up_on: None) -> None:
    cache.delete(SEARCHED_KEY)
    assert warmed_up() is False


def test_a_service_that_searched_before_loads_the_embedder_at_start(warm_up_on: None) -> None:
    cache.set(SEARCHED_KEY, 1, timeout=None)
    assert warmed_up() is True


def test_the_warm_up_can_be_turned_off(settings: object) -> None:
    settings.QUERY_EMBEDDER_WARM_UP = False  # type: ignore[attr-defined]
    cache.set(SEARCHED_KEY, 1, timeout=None)
    assert warmed_up() is False


def test_the_web_process_starts_and_stops_the_warm_up_with_its_lifespan() -> None:
    assert query_embedder.start in application.on_startup
    assert query_embedder.stop in application.on_shutdown

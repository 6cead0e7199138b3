"""The cache backend (config.cache) on the real embedded Redis: one redis.Redis per connection pool for every call,
and `set_many` writing each key with its expiry as Django's own client does, in one pipeline without MULTI/EXEC; a
Redis that never answers is not asked again for a while."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.cache import cache

from config.cache import KEYS_PER_SCRIPT_CALL, SCRIPT_ABOVE_KEYS, SharedRedisCacheClient
from tests.conftest import owed_settled, redis_left_alone


def client() -> SharedRedisCacheClient:
    shared: SharedRedisCacheClient = cache._cache  # type: ignore[attr-defined]  # private: not in django-stubs
    return shared


def test_every_call_gets_the_same_redis_client_on_the_same_pool() -> None:
    first = client().get_client(write=True)
    assert client().get_client() is first and client().get_client("some key", write=True) is first
    assert isinstance(first, redis.Redis)
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(client().get_client())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(found is first for found in seen)


def test_set_many_stores_every_value_with_its_expiry() -> None:
    cache.set_many({"a": 1, "b": {"nested": [1, None]}, "c": "text"}, timeout=60)
    assert cache.get_many(["a", "b", "c", "missing"]) == {"a": 1, "b": {"nested": [1, None]}, "c": "text"}
    raw = client().get_client()
    ttls = [raw.ttl(cache.make_and_validate_key(key)) for key in "abc"]
    assert all(55 <= ttl <= 60 for ttl in ttls), ttls


def test_set_many_without_a_timeout_keeps_the_keys_and_a_zero_timeout_removes_them() -> None:
    cache.set_many({"kept": 1, "gone": 2}, timeout=None)
    assert client().get_client().ttl(cache.make_and_validate_key("kept")) == -1  # no expiry
    cache.set_many({"gone": 3}, timeout=0)
    assert cache.get_many(["kept", "gone"]) == {"kept": 1}


def test_add_many_keeps_only_what_the_cache_does_not_hold_each_with_its_expiry() -> None:
    cache.set("held", "as it was", timeout=3600)
    cache.add_many({"held": 0, "new": 0, "other": {"nested": 1}}, 60)  # type: ignore[attr-defined]
    assert cache.get_many(["held", "new", "other"]) == {"held": "as it was", "new": 0, "other": {"nested": 1}}
    raw = client().get_client()
    assert raw.ttl(cache.make_and_validate_key("held")) > 60  # its expiry left as it was too
    assert all(55 <= raw.ttl(cache.make_and_validate_key(key)) <= 60 for key in ("new", "other"))


def test_set_many_sends_no_transaction(monkeypatch: Any) -> None:
    sent: list[tuple[Any, ...]] = []
    original = redis.client.Pipeline.execute

    def execute(pipeline: Any, *args: Any, **kwargs: Any) -> Any:
        sent.extend(command[0] for command in pipeline.command_stack)
        assert not pipeline.transaction
        return original(pipeline, *args, **kwargs)

    monkeypatch.setattr(redis.client.Pipeline, "execute", execute)
    cache.set_many({"x": 1, "y": 2}, timeout=30)
    assert [command[0] for command in sent] == ["SET", "SET"]
    assert cache.get_many(["x", "y"]) == {"x": 1, "y": 2}


def test_replies_are_parsed_by_hiredis() -> None:
    # The pinned hiredis (requirements/base.in): redis-py falls back to its pure-Python parser without a word, and
    # a cache read of a search's ~36 keys took 0.43 ms with it against 0.28 ms (docs/benchmarks.md, issue 18).
    from redis._parsers import _HiredisParser

    pool = client().get_client().connection_pool
    assert pool.connection_kwargs.get("parser_class", _HiredisParser) is _HiredisParser
    connection = pool.get_connection()
    try:
        assert isinstance(connection._parser, _HiredisParser)
    finally:
        pool.release(connection)


def test_a_large_set_many_goes_in_a_few_calls_with_every_value_and_expiry(monkeypatch: Any) -> None:
    scripts: list[int] = []  # the keys of each script call this process made
    pipelines: list[int] = []
    call, execute = redis.commands.core.Script.__call__, redis.client.Pipeline.execute

    def counted_call(script: Any, keys: Any = None, *args: Any, **kwargs: Any) -> Any:
        scripts.append(len(keys or []))
        return call(script, keys, *args, **kwargs)

    def counted_execute(pipeline: Any, *args: Any, **kwargs: Any) -> Any:
        pipelines.append(len(pipeline.command_stack))
        return execute(pipeline, *args, **kwargs)

    monkeypatch.setattr(redis.commands.core.Script, "__call__", counted_call)
    monkeypatch.setattr(redis.client.Pipeline, "execute", counted_execute)
    values: dict[str, Any] = {f"word:{n}": n for n in range(2_500)} | {"card": {"label": "Melanie"}, "zero": 0}
    cache.set_many(values, timeout=45)
    assert pipelines == []  # not a command per key
    assert scripts == [KEYS_PER_SCRIPT_CALL] * 10 + [len(values) - 10 * KEYS_PER_SCRIPT_CALL]
    assert cache.get_many(list(values)) == values
    raw = client().get_client()
    ttls = {raw.ttl(cache.make_and_validate_key(key)) for key in ("word:0", "word:2499", "card", "zero")}
    assert all(40 <= ttl <= 45 for ttl in ttls), ttls
    raw.script_flush()  # Redis forgot the script (a restart): loaded again, not an error
    cache.set_many({f"again:{n}": n for n in range(SCRIPT_ABOVE_KEYS + 1)}, timeout=45)
    assert cache.get(f"again:{SCRIPT_ABOVE_KEYS}") == SCRIPT_ABOVE_KEYS


def test_a_large_set_many_without_a_timeout_keeps_the_keys() -> None:
    values = {f"kept:{n}": n for n in range(SCRIPT_ABOVE_KEYS + 10)}
    cache.set_many(values, timeout=None)
    assert cache.get_many(list(values)) == values
    assert client().get_client().ttl(cache.make_and_validate_key("kept:0")) == -1  # no expiry


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A Redis of this test's own: its URL, and its pid to pause it with (SIGSTOP: it takes connections and never
    answers)."""
    from config.embedded import Runtime, _Redis

    redis_server = _Redis(Runtime(tmp_path / "redis", postgres=False, redis=True))
    redis_server.ensure_running()
    pid = int((redis_server.runtime.redis_dir / "redis.pid").read_text())
    try:
        yield redis_server.runtime.redis_url(), pid
    finally:
        os.kill(pid, signal.SIGCONT)
        redis_server.stop()


@pytest.fixture
def paused_redis(own_redis: tuple[str, int]) -> tuple[Any, int]:
    """A cache on a Redis of this test's own; the pid to pause it with."""
    from config.cache import SharedClientRedisCache

    url, pid = own_redis
    return SharedClientRedisCache(url, {"OPTIONS": {"socket_timeout": 0.3}}), pid


def test_after_a_call_redis_never_answers_the_process_s_calls_fail_at_once_until_it_answers_again(
    paused_redis: tuple[Any, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait lasts as long as the outage (a watcher thread PINGs every WATCH_EVERY), not AWAY_SECONDS: no later call
    waits out a timeout. Once Redis answers, the wait ends without a call of the process's having to try."""
    from redis.exceptions import TimeoutError as RedisTimeoutError

    from config import cache as shared

    paused, pid = paused_redis
    monkeypatch.setattr(shared, "AWAY_SECONDS", 0.2)
    monkeypatch.setattr(shared, "WATCH_EVERY", 0.1)
    paused.set("word", 1)
    os.kill(pid, signal.SIGSTOP)
    with pytest.raises(RedisTimeoutError):
        paused.get("word")  # waited its socket timeout
    time.sleep(1.0)  # five times AWAY_SECONDS: the watcher's PINGs time out meanwhile
    assert shared.redis_away()
    for call in (lambda: paused.get("word"), lambda: paused.get_many(["word"]), lambda: paused.set_many({"a": 1}, 60)):
        with pytest.raises(shared.RedisAway):  # not tried: no wait
            call()
    os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 5
    while shared.redis_away() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not shared.redis_away()  # heard by the watcher: no call of ours asked
    assert paused.get("word") == 1


def test_a_job_is_not_sent_while_redis_is_away_and_the_send_is_logged_as_failed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from django.conf import settings

    from config import cache as shared
    from memory.services.embeddings import send_chunk_vectors_job

    broker = redis.Redis.from_url(settings.REDIS_URL)
    queued = broker.llen("celery")
    monkeypatch.setattr(shared, "_away_until", 0.0)
    shared.noted_away()
    with caplog.at_level(logging.WARNING, logger="memory.embeddings"):
        send_chunk_vectors_job(["chk_x"])
    assert [record.getMessage() for record in caplog.records] == ["embeddings.dispatch_failed"]
    assert broker.llen("celery") == queued  # not sent (Redis answers: it would have been)


def test_a_publish_redis_refuses_leaves_it_asked_and_one_it_cannot_reach_starts_the_wait(
    own_redis: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """kombu raises both as OperationalError: a Redis out of memory answers (with an error), so the process keeps
    asking it; a Redis that cannot be reached does not."""
    from kombu import Connection
    from kombu.exceptions import OperationalError

    from config import cache as shared
    from config.queue import QueueNotAnswering, job_sent
    from memory.tasks import embed_chunks

    url, _ = own_redis
    full = redis.Redis.from_url(url)
    broker_url = url.replace("unix://", "redis+socket://", 1)  # kombu's spelling (config.settings)
    full.config_set("maxmemory-policy", "noeviction")
    full.config_set("maxmemory", 1)  # every write refused (OOM)
    monkeypatch.setattr(shared, "_away_until", 0.0)
    with Connection(broker_url) as broker, pytest.raises(OperationalError, match="maxmemory"):
        job_sent(embed_chunks, args=(["chk_x"],), connection=broker)
    assert not shared.redis_away()

    monkeypatch.setattr(shared, "WATCH_EVERY", 60)  # the watcher PINGs the suite's Redis, which answers: not yet
    with Connection(broker_url + ".gone") as broker, pytest.raises(QueueNotAnswering):  # no such socket: no answer
        job_sent(embed_chunks, args=(["chk_x"],), connection=broker)
    assert shared.redis_away()


def test_a_job_not_sent_while_redis_is_away_is_sent_once_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.conf import settings

    from config import cache as shared
    from config import redis_retry
    from memory.services.embeddings import send_chunk_vectors_job

    broker = redis.Redis.from_url(settings.REDIS_URL)
    queued = broker.llen("celery")
    redis_left_alone(monkeypatch)
    send_chunk_vectors_job(["chk_owed"])
    assert broker.llen("celery") == queued and redis_retry.owed() == 1
    shared.redis_heard()
    owed_settled(10)
    assert broker.llen("celery") == queued + 1  # sent by this process, not left to the sweep
    broker.lpop("celery")  # no worker here: the job would wait for the next test's


def test_a_large_set_many_refused_part_way_says_so_not_that_nothing_was_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its script calls go in batches: Redis left alone after the first, RedisAway would tell `kept_unless_erased`
    that nothing was kept (memory.recall.caching), and an erasure's check would be skipped."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    from config import cache as shared

    monkeypatch.setattr(shared, "KEYS_PER_SCRIPT_CALL", SCRIPT_ABOVE_KEYS + 1)
    cache.set_many({f"loaded:{n}": n for n in range(SCRIPT_ABOVE_KEYS + 1)}, timeout=60)  # Redis has the script
    asked = iter([False, True])  # the first batch asked, the second refused
    monkeypatch.setattr(shared, "redis_away", lambda: next(asked))
    values = {f"batched:{n}": n for n in range(2 * (SCRIPT_ABOVE_KEYS + 1))}
    with pytest.raises(RedisConnectionError) as refused:
        cache.set_many(values, timeout=60)
    assert not isinstance(refused.value, shared.RedisAway)
    monkeypatch.undo()
    assert cache.get("batched:0") == 0 and cache.get(f"batched:{SCRIPT_ABOVE_KEYS + 1}") is None


def test_a_call_of_an_outage_that_ended_meanwhile_does_not_start_another_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    from redis.exceptions import TimeoutError as RedisTimeoutError

    from config import cache as shared

    def timed_out_as_redis_came_back() -> None:
        shared.noted_away()  # while this call waits out its timeout, another's finds Redis away,
        shared.redis_heard()  # and then it answers again
        raise RedisTimeoutError("Timeout reading from socket")

    with pytest.raises(RedisTimeoutError):
        shared.asked_of_redis(timed_out_as_redis_came_back)
    assert not shared.redis_away()

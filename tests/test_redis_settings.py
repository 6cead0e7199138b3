"""REDIS_TIMEOUT_S: how long every Redis client waits for a Redis that does not answer (config/settings.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.process import ROOT

READ = (
    "import json, django; django.setup(); from django.conf import settings as s; print(json.dumps(["
    "s.CACHES['default']['OPTIONS'], s.CELERY_BROKER_TRANSPORT_OPTIONS['socket_timeout'],"
    " s.CELERY_REDIS_SOCKET_TIMEOUT]))"
)


def settings_read(value: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_TIMEOUT_S": value}
    return subprocess.run([sys.executable, "-c", READ], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_every_redis_client_waits_the_seconds_set() -> None:
    read = settings_read("7")
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout.splitlines()[-1]) == [{"socket_timeout": 7, "socket_connect_timeout": 7}, 7, 7]


@pytest.mark.parametrize(
    ("value", "said"),
    [("0", "REDIS_TIMEOUT_S must be at least 1, got '0'"), ("soon", "REDIS_TIMEOUT_S must be an integer, got 'soon'")],
)
def test_a_timeout_that_would_not_wait_or_is_no_number_is_refused_with_its_name(value: str, said: str) -> None:
    read = settings_read(value)
    assert read.returncode != 0
    assert said in read.stderr

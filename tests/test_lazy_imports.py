"""Importing the web app must not load heavy libraries: they load lazily in the worker that needs them."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ["onnxruntime", "tokenizers", "markitdown", "magika", "torch"]


# A serving web process has imported every view: its URL configuration, walked to the last pattern.
SERVING = (
    "from django.urls import get_resolver\n"
    "def walk(patterns):\n"
    "    for pattern in patterns:\n"
    "        walk(getattr(pattern, 'url_patterns', []))\n"
    "walk(get_resolver().url_patterns)\n"
)


@functools.cache
def modules_after(code: str = "") -> frozenset[str]:
    """Every module a fresh interpreter holds once `config.asgi` is imported and `code` ran (one subprocess per
    `code` for all tests)."""
    program = f"import json, sys; import config.asgi\n{code}print(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, cwd=Path(__file__).parent.parent,
        timeout=120, check=True,
    )  # fmt: skip
    return frozenset(json.loads(result.stdout.strip().splitlines()[-1]))


def modules_after_importing_the_web_app() -> frozenset[str]:
    return modules_after()


def test_web_app_import_does_not_load_heavy_libraries() -> None:
    assert [name for name in HEAVY if name in modules_after_importing_the_web_app()] == []


def test_web_app_import_leaves_the_mcp_sdk_for_after_the_server_is_up() -> None:
    # The SDK (pydantic models of every protocol version) was half of the web process's start; /healthz, REST and
    # the web UI do not need it, and /mcp waits for it on its first call (tests/mcp cover that path).
    loaded = modules_after_importing_the_web_app()
    assert sorted(m for m in loaded if m == "mcp" or m.startswith("mcp.")) == []


def test_serving_web_process_does_not_load_an_http_client() -> None:
    # httpx (with the CLI extras it imports when they are installed: click, rich, pygments) is ~17 MB of a web or
    # worker process; only calls to a remote model or GitHub need it, and those import it when they are made.
    assert "httpx" not in modules_after(SERVING)

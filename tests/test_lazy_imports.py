"""Importing the web app must not load heavy libraries: they load lazily in the worker that needs them."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ["onnxruntime", "tokenizers", "markitdown", "magika", "torch"]


@functools.cache
def modules_after_importing_the_web_app() -> frozenset[str]:
    """Every module a fresh interpreter holds once `config.asgi` is imported (one subprocess for both tests)."""
    code = "import json, sys; import config.asgi; print(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=Path(__file__).parent.parent,
        timeout=120, check=True,
    )  # fmt: skip
    return frozenset(json.loads(result.stdout.strip().splitlines()[-1]))


def test_web_app_import_does_not_load_heavy_libraries() -> None:
    assert [name for name in HEAVY if name in modules_after_importing_the_web_app()] == []


def test_web_app_import_leaves_the_mcp_sdk_for_after_the_server_is_up() -> None:
    # The SDK (pydantic models of every protocol version) was half of the web process's start; /healthz, REST and
    # the web UI do not need it, and /mcp waits for it on its first call (tests/mcp cover that path).
    loaded = modules_after_importing_the_web_app()
    assert sorted(m for m in loaded if m == "mcp" or m.startswith("mcp.")) == []

"""Importing the web app must not load heavy libraries: they load lazily in the worker that needs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ["onnxruntime", "tokenizers", "markitdown", "magika", "torch"]


def test_web_app_import_does_not_load_heavy_libraries() -> None:
    code = (
        f"import json, sys; import config.asgi; print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=Path(__file__).parent.parent,
        timeout=120, check=True,
    )  # fmt: skip
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_web_app_import_leaves_the_mcp_sdk_for_after_the_server_is_up() -> None:
    # The SDK (pydantic models of every protocol version) was half of the web process's start; /healthz, REST and
    # the web UI do not need it, and /mcp waits for it on its first call (tests/mcp cover that path).
    code = (
        "import json, sys; import config.asgi; "
        "print(json.dumps(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.'))))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=Path(__file__).parent.parent,
        timeout=120, check=True,
    )  # fmt: skip
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []

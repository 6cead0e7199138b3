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

"""Settings for the test suite: its own embedded data directory, so tests never touch `make run` data."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("MEMORY_DATA_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test"))

from config.env import env_bool
from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Rows written before the answer, so a test reads them at once (and inside its transaction); the tests of the
# deferred writer turn it on in the server they start.
TOOL_EVENTS_DEFERRED = env_bool("TOOL_EVENTS_DEFERRED", False)
# The servers tests start load no model they are not asked to (the warm-up's own tests turn it on).
QUERY_EMBEDDER_WARM_UP = env_bool("QUERY_EMBEDDER_WARM_UP", False)
LOGGING = {**LOGGING, "root": {"handlers": ["console"], "level": "WARNING"}}  # noqa: F405

"""Settings for the test suite: its own embedded data directory, so tests never touch `make run` data."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("MEMORY_DATA_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test"))

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGGING = {**LOGGING, "root": {"handlers": ["console"], "level": "WARNING"}}  # noqa: F405

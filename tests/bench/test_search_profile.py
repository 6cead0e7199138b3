"""bench/search_profile.py refuses a compared server's setting that is not NAME=VALUE before it starts anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "search_profile.py"


@pytest.mark.parametrize("setting", ["EMBEDDING_THREADS", "=1"])
def test_a_setting_without_a_name_and_a_value_is_refused(tmp_path: Path, setting: str) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "none.json"), "--compare-env", setting],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert done.returncode == 2
    assert f"argument --compare-env: {setting!r} is not NAME=VALUE" in done.stderr

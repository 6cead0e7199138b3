"""bench/search_concurrency.py reads what the server logged while it was asked, and nothing from before."""

from __future__ import annotations

import json
from pathlib import Path

from bench.search_concurrency import logged


def test_logged_counts_the_warnings_and_errors_after_the_offset_by_event(tmp_path: Path) -> None:
    log = tmp_path / "uvicorn.log"
    before = json.dumps({"level": "warning", "event": "recall.bookkeeping_dropped"}) + "\n"
    after = [
        {"level": "warning", "event": "recall.bookkeeping_dropped"},
        {"level": "info", "event": "recall.embedder_warmed"},
        {"level": "error", "event": "request.failed"},
        {"level": "warning", "event": "recall.bookkeeping_dropped"},
    ]
    log.write_text(before + "".join(json.dumps(line) + "\n" for line in after) + "Traceback: ValueError: x\n")

    found = logged(log, since=len(before.encode()))

    assert found == {"recall.bookkeeping_dropped": 2, "request.failed": 1, "Traceback: ValueError: x": 1}

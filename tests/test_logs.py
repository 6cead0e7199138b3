"""The JSON log line: the event name and the fixed fields are the record's own, whatever context a call adds."""

from __future__ import annotations

import json
import logging

from config.logs import JsonFormatter


def formatted(**context: object) -> dict[str, object]:
    record = logging.getLogger("memory.test").makeRecord(
        "memory.test", logging.WARNING, __file__, 1, "progress.publish_failed", (), None, extra=context
    )
    return json.loads(JsonFormatter().format(record))


def test_context_fields_are_added_beside_the_event() -> None:
    line = formatted(table="memory_chunk", elapsedMs=3)
    assert line["event"] == "progress.publish_failed"
    assert (line["table"], line["elapsedMs"]) == ("memory_chunk", 3)


def test_a_context_field_named_like_a_fixed_field_never_replaces_it() -> None:
    line = formatted(event="source.processed", level="debug", logger="other", time="yesterday")
    assert (line["event"], line["level"], line["logger"]) == ("progress.publish_failed", "warning", "memory.test")
    assert line["time"] != "yesterday"
    assert (line["extra_event"], line["extra_level"], line["extra_logger"], line["extra_time"]) == (
        "source.processed",
        "debug",
        "other",
        "yesterday",
    )

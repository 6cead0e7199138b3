"""What every importer produces: the ingestion inputs an export turns into, and why anything was left out.

An importer only reads: it parses the whole file before anything is stored, so a malformed export is refused
as a whole (`ImportFormatError`) and never half-imported."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory.services.ingestion_shapes import ConversationIn, TranscriptIn

MAX_ID_LENGTH = 200  # the REST ingestion limit for conversation and message ids; an export's ids fit easily
MAX_TITLE_LENGTH = 500


class ImportFormatError(ValueError):
    """The file is not the export it claims to be; the message says where and what."""


@dataclass
class ImportPlan:
    """The conversations and transcripts an export holds, and how many pieces were skipped, by reason."""

    conversations: list[ConversationIn] = field(default_factory=list)
    transcripts: list[TranscriptIn] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def add_conversation(self, *, origin: str, prefix: str, conversation_id: str, name: Any, messages: list) -> None:
        """One chat of the export, under a stable id (`<prefix>:<its id>`) so a re-run stores nothing twice; a
        chat left with no message is counted, not imported."""
        if not messages:
            self.skipped["conversation with nothing to import"] += 1
            return
        self.conversations.append(
            ConversationIn(
                id=f"{prefix}:{conversation_id}",
                title=title(name),
                messages=messages,
                source_context={"origin": origin, "conversationId": conversation_id},
            )
        )


def read_json(path: Path) -> Any:
    """The parsed file, or an ImportFormatError naming what is wrong with it."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportFormatError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    if raw.startswith(b"PK\x03\x04"):
        raise ImportFormatError(f"{path} is a zip archive; unzip the export and give the JSON file inside it.")
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path} is not UTF-8 text (byte {exc.start}).") from exc
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from exc


JSON_TYPES: dict[type, str] = {list: "a list", dict: "an object", str: "a string"}


COMMANDS = {"chatgpt": "import_chatgpt", "claude": "import_claude", "aistudio": "import_aistudio"}


def refuse_other_export(data: Any, expected: str) -> None:
    """A clear word when the file is another importer's export, rather than a complaint about a missing field."""
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    found = (
        "chatgpt" if "mapping" in first
        else "claude" if "chat_messages" in first
        else "aistudio" if isinstance(data, dict) and "chunkedPrompt" in data
        else expected
    )  # fmt: skip
    if found != expected:
        raise ImportFormatError(f"This looks like a {NAMES[found]}; import it with manage.py {COMMANDS[found]}.")


NAMES = {"chatgpt": "ChatGPT export", "claude": "Claude export", "aistudio": "Google AI Studio chat"}


def expect(value: Any, kind: type, where: str) -> Any:
    """`value` if it has the expected JSON type (list, object or string), else an error naming the place."""
    if not isinstance(value, kind):
        raise ImportFormatError(f"{where}: expected {JSON_TYPES[kind]}, found {json_type(value)}.")
    return value


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return JSON_TYPES.get(type(value), "a number")


def external_id(value: Any, where: str) -> str:
    """A stable id from the export (a non-empty string or number), usable as an ingestion id."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ImportFormatError(f"{where}: a non-empty id is required.")
    if len(value) > MAX_ID_LENGTH:
        raise ImportFormatError(f"{where}: the id is longer than {MAX_ID_LENGTH} characters.")
    return value.strip()


def clean_text(text: str) -> str:
    """Text as it can be stored: PostgreSQL refuses NUL characters, which some exports carry."""
    return text.replace("\x00", "")


def title(value: Any) -> str:
    return clean_text(value.strip())[:MAX_TITLE_LENGTH] if isinstance(value, str) else ""


def epoch_time(value: Any, where: str) -> datetime | None:
    """A Unix timestamp in seconds (ChatGPT's create_time); null or 0 means unknown."""
    if value is None or value == 0:
        return None
    seconds = value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ImportFormatError(f"{where}: expected a number of seconds, found {json_type(value)}.")
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise ImportFormatError(f"{where}: {seconds!r} is not a usable timestamp.") from exc


def iso_time(value: Any, where: str) -> datetime | None:
    """An ISO 8601 time (Claude's created_at); a time without a zone is read as UTC."""
    if value is None or value == "":
        return None
    text = expect(value, str, where)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ImportFormatError(f"{where}: {text!r} is not an ISO 8601 time.") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)

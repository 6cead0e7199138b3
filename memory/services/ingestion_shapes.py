"""What clients hand to ingestion, as typed values: conversations and their messages, documents (and a
person's message), transcript segments. The REST serializers and MCP tools build these; ingestion stores them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.models import SourceKind, SourceScope


@dataclass(frozen=True)
class MessageIn:
    id: str
    content: str
    role: str = ""
    speaker: str = ""
    timestamp: datetime | None = None


@dataclass(frozen=True)
class ConversationIn:
    id: str
    messages: Sequence[MessageIn]
    title: str = ""
    scope: str = SourceScope.PERSONAL
    source_context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DocumentIn:
    """A document, a person's message (`source_kind` "message", e.g. an email) or a file's metadata."""

    id: str
    content: str = ""
    title: str = ""
    scope: str = SourceScope.PERSONAL
    timestamp: datetime | None = None
    source_context: dict[str, Any] = field(default_factory=dict)
    source_kind: str = SourceKind.DOCUMENT
    message_id: str = ""
    thread_id: str = ""
    authored_at: datetime | None = None
    participants: Sequence[dict[str, str]] = ()
    parent_id: str = ""


@dataclass(frozen=True)
class SegmentIn:
    speaker: str
    text: str
    start: float | None = None
    timestamp: datetime | None = None


@dataclass(frozen=True)
class TranscriptIn:
    id: str
    segments: Sequence[SegmentIn]
    title: str = ""
    scope: str = SourceScope.PERSONAL
    timestamp: datetime | None = None
    source_context: dict[str, Any] = field(default_factory=dict)
    origin: str = ""


def segments_from_text(text: str) -> list[SegmentIn]:
    """A plain transcript, one turn per line, 'Speaker: text' where a short speaker name leads the line."""
    segments = []
    for line in text.splitlines():
        if not line.strip():
            continue
        speaker, separator, said = line.partition(": ")
        if separator and 0 < len(speaker) <= 60:
            segments.append(SegmentIn(speaker=speaker.strip(), text=said))
        else:
            segments.append(SegmentIn(speaker="", text=line))
    return segments


def render_segments(segments: Sequence[SegmentIn] | Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each segment as (speaker, line) in the stored text, where lines are joined by newlines."""
    rendered = []
    for segment in segments:
        speaker = segment["speaker"] if isinstance(segment, dict) else segment.speaker
        text = segment["text"] if isinstance(segment, dict) else segment.text
        rendered.append((speaker, f"{speaker}: {text}" if speaker else text))
    return rendered

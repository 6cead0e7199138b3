"""Splitting text into searchable pieces that keep the way back to their message, speaker and time."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memory.models import Source, SourceKind
from memory.models.sources import turn_context

_PARAGRAPH = re.compile(r"\n\s*\n")
# A message is also found by who said it and the turns just before it: an answer is found by the words of
# the question it answers (measured on LoCoMo, docs/benchmarks.md).
CONTEXT_TURNS = 2
CONTEXT_CHARS = 600
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class ChunkDraft:
    text: str
    start: int
    end: int
    message_id: str = ""
    speaker: str = ""
    authored_at: datetime | None = None
    context: str = ""


def split_text(text: str, target: int) -> list[tuple[int, int]]:
    """Character spans of about `target` characters, cut at paragraph, then sentence, then word boundaries."""
    spans: list[tuple[int, int]] = []
    start = 0
    length = len(text)
    while start < length:
        while start < length and text[start].isspace():
            start += 1
        if start >= length:
            break
        end = min(start + target, length)
        if end < length:
            window = text[start:end]
            cut = max(
                (m.end() for m in _PARAGRAPH.finditer(window) if m.end() > target // 2),
                default=0,
            ) or max((m.end() for m in _SENTENCE_END.finditer(window) if m.end() > target // 2), default=0)
            if not cut:
                space = window.rfind(" ", target // 2)
                cut = space + 1 if space > 0 else len(window)
            end = start + cut
        stripped_end = end
        while stripped_end > start and text[stripped_end - 1].isspace():
            stripped_end -= 1
        spans.append((start, stripped_end))
        start = end
    return spans


def turns_before(conversation_id: str, ordinal: int) -> list[str]:
    """The texts of the live turns of a conversation just before `ordinal`, oldest first: what a turn's context is
    made from (`message_context`)."""
    earlier = Source.objects.live().filter(parent_id=conversation_id, ordinal__lt=ordinal).order_by("-ordinal")
    return list(earlier.values_list("content", flat=True)[:CONTEXT_TURNS])[::-1]


def message_context(speaker: str, earlier: list[str]) -> str:
    """Searchable context of a message: the end of the turns before it, then the speaker's name (not a role),
    so the end of the context reads as the line the message continues ("… Where did you go? Caroline:")."""
    return turn_context(" ".join(earlier[-CONTEXT_TURNS:])[-CONTEXT_CHARS:], speaker)


def chunks_for_source(source: Source, *, target: int, context: str | None = None) -> list[ChunkDraft]:
    """The chunks of one source. `context` is what they are also found by; a document's title by default."""
    if source.kind == SourceKind.TRANSCRIPT and source.segments:
        return _transcript_chunks(source, target)
    text = source.text
    return [
        ChunkDraft(
            text=text[start:end],
            start=start,
            end=end,
            message_id=source.message_id,
            speaker=source.speaker,
            authored_at=source.authored_at,
            context=source.title if context is None else context,
        )
        for start, end in split_text(text, target)
    ]


def _transcript_chunks(source: Source, target: int) -> list[ChunkDraft]:
    """Consecutive segments grouped up to `target` characters; a chunk names its speaker when it has one.
    Offsets follow the stored text, where each segment is one rendered line (a segment may hold newlines)."""
    from memory.services.ingestion_shapes import render_segments

    drafts: list[ChunkDraft] = []
    group: list[tuple[int, int, str]] = []  # (start, end, speaker) of each segment in the group
    offset = 0

    def flush() -> None:
        if group:
            start, end = group[0][0], group[-1][1]
            speakers = {speaker for _, _, speaker in group}
            only = speakers.pop() if len(speakers) == 1 else ""
            drafts.append(
                ChunkDraft(text=source.content[start:end], start=start, end=end, speaker=only, context=source.title)
            )
            group.clear()

    for speaker, line in render_segments(source.segments):
        start, end = offset, offset + len(line)
        offset = end + 1
        if group and end - group[0][0] > target:
            flush()
        group.append((start, end, speaker))
    flush()
    return drafts

"""A Google AI Studio chat (the JSON file AI Studio keeps in Drive), as a speaker-attributed transcript
(seeds/000, "Google AI Studio importer").

The file is `chunkedPrompt.chunks`: one entry per turn piece, `role` "user" or "model", with `text`. Model
reasoning (`isThought`, or `thought` parts) and pasted attachments (`driveDocument`, `driveImage`,
`inlineImage`, `inlineData`, uploaded files, videos) are dropped: they are not what was said. The file has no
id and grows as the chat goes on, so it is imported incrementally: every run sends one transcript holding the
turns after the watermark, the position of the last turn already imported (kept in that transcript's
sourceContext, see memory.services.history_import.transcript_watermark)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from memory.importers.base import ImportFormatError, ImportPlan, clean_text, expect, refuse_other_export, title
from memory.services.ingestion_shapes import SegmentIn, TranscriptIn

ORIGIN = "aistudio-export"
SPEAKERS = {"user": "user", "model": "model"}  # "user" is the owner's own words to the extractor
ATTACHMENT_KEYS = ("driveDocument", "driveImage", "driveVideo", "inlineImage", "inlineData", "inlineFile",
                   "youtubeVideo", "fileData", "file")  # fmt: skip


@dataclass(frozen=True)
class Turn:
    position: int  # 1-based place among the file's chunks: what the watermark counts
    speaker: str
    text: str

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(f"{self.speaker}\n{self.text}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Watermark:
    """The last turn already imported: its position, and a fingerprint to notice an edit before it."""

    position: int = 0
    fingerprint: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"position": self.position, "fingerprint": self.fingerprint}


@dataclass
class AiStudioChat:
    chat: str
    title: str
    turns: list[Turn]
    chunks: int
    plan: ImportPlan  # carries what parsing dropped

    def after(self, watermark: Watermark) -> ImportPlan:
        """The transcript of the turns after the watermark (none when nothing is new)."""
        if watermark.position:
            at = next((turn for turn in self.turns if turn.position == watermark.position), None)
            if at is None or at.fingerprint != watermark.fingerprint:
                raise ImportFormatError(
                    f"The chat changed at or before turn {watermark.position}, the last one imported. Import the "
                    "edited chat under another --chat-id to keep both versions."
                )
        new = [turn for turn in self.turns if turn.position > watermark.position]
        plan = ImportPlan(skipped=self.plan.skipped.copy())
        if watermark.position:
            plan.skipped["already imported (before the watermark)"] += len(self.turns) - len(new)
        if not new:
            return plan
        last = Watermark(position=new[-1].position, fingerprint=new[-1].fingerprint)
        plan.transcripts.append(
            TranscriptIn(
                id=f"aistudio:{self.chat}:{new[0].position}-{last.position}",
                title=self.title,
                segments=[SegmentIn(speaker=turn.speaker, text=turn.text) for turn in new],
                source_context={
                    "origin": ORIGIN,
                    "chat": self.chat,
                    "turns": [new[0].position, last.position],
                    "watermark": last.as_json(),
                },
            )
        )
        return plan


def parse_aistudio(data: Any, *, chat: str) -> AiStudioChat:
    """The chat's turns, in order, without reasoning and attachments. `chat` names it (the file has no id)."""
    if not chat.strip():
        raise ImportFormatError("An AI Studio chat needs a name (--chat-id).")
    refuse_other_export(data, "aistudio")
    root = expect(data, dict, "An AI Studio chat file")
    prompt = expect(root.get("chunkedPrompt"), dict, "chunkedPrompt")
    chunks = expect(prompt.get("chunks"), list, "chunkedPrompt.chunks")
    plan = ImportPlan()
    turns = []
    for position, chunk in enumerate(chunks, start=1):
        where = f"chunk {position}"
        chunk = expect(chunk, dict, where)
        speaker = SPEAKERS.get(chunk.get("role"))
        if speaker is None:
            raise ImportFormatError(f"{where}: role must be 'user' or 'model', found {chunk.get('role')!r}.")
        if chunk.get("isThought"):
            plan.skipped["model reasoning"] += 1
            continue
        if any(key in chunk for key in ATTACHMENT_KEYS):
            plan.skipped["pasted attachment"] += 1
            continue
        text = clean_text(_text(chunk, where, plan)).strip()
        if not text:
            plan.skipped["empty turn"] += 1
            continue
        turns.append(Turn(position=position, speaker=speaker, text=text))
    return AiStudioChat(chat=chat.strip(), title=title(chat), turns=turns, chunks=len(chunks), plan=plan)


def _text(chunk: dict[str, Any], where: str, plan: ImportPlan) -> str:
    if "parts" not in chunk:
        return str(expect(chunk.get("text", ""), str, f"{where}: text"))
    texts = []
    for part in expect(chunk["parts"], list, f"{where}: parts"):
        part = expect(part, dict, f"{where}: part")
        if part.get("thought"):
            plan.skipped["model reasoning"] += 1
        elif any(key in part for key in ATTACHMENT_KEYS):
            plan.skipped["pasted attachment"] += 1
        else:
            texts.append(str(expect(part.get("text", ""), str, f"{where}: part text")))
    return "".join(texts)

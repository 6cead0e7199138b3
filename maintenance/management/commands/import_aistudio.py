"""`manage.py import_aistudio chat.json --user U`: a Google AI Studio chat into memory as a transcript, one run
at a time: each run sends only the turns after the last one imported (the watermark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from maintenance.management.commands._importing import ImportCommand
from memory.access import Access
from memory.importers.aistudio import ORIGIN, Watermark, parse_aistudio
from memory.importers.base import ImportPlan
from memory.services.history_import import transcript_watermark


class Command(ImportCommand):
    help = (
        "Import a Google AI Studio chat (its JSON file from Drive) as a transcript of you and the model, without "
        "the model's reasoning or pasted attachments. Run it again as the chat grows: only new turns are sent."
    )
    origin = ORIGIN
    file_help = "The chat's JSON file, as AI Studio saves it in Google Drive."

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--chat-id", default="",
            help="A stable name for this chat (the file has no id). Default: the file name without .json.",
        )  # fmt: skip

    def plan(self, data: Any, path: Path, access: Access, options: dict[str, Any]) -> ImportPlan:
        chat = parse_aistudio(data, chat=options["chat_id"] or path.stem)
        mark = transcript_watermark(access=access, origin=ORIGIN, chat=chat.chat)
        return chat.after(
            Watermark(position=int(mark.get("position", 0)), fingerprint=str(mark.get("fingerprint", "")))
        )

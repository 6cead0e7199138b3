"""`manage.py import_chatgpt conversations.json --user U`: a ChatGPT data export into memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from maintenance.management.commands._importing import ImportCommand
from memory.access import Access
from memory.importers.base import ImportPlan
from memory.importers.chatgpt import ORIGIN, parse_chatgpt


class Command(ImportCommand):
    help = (
        "Import your ChatGPT history (conversations.json from ChatGPT's data export): the branch you last saw of "
        "each conversation, your messages and ChatGPT's answers. Re-running imports only what is new."
    )
    origin = ORIGIN
    file_help = "conversations.json from the ChatGPT data export (Settings > Data controls > Export data)."

    def plan(self, data: Any, path: Path, access: Access, options: dict[str, Any]) -> ImportPlan:
        return parse_chatgpt(data)

"""`manage.py import_claude conversations.json --user U`: a Claude.ai data export into memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from maintenance.management.commands._importing import ImportCommand
from memory.access import Access
from memory.importers.base import ImportPlan
from memory.importers.claude import ORIGIN, parse_claude


class Command(ImportCommand):
    help = (
        "Import your Claude.ai history (conversations.json from Claude's data export): your messages and Claude's "
        "answers, without thinking, tool calls or attachments. Re-running imports only what is new."
    )
    origin = ORIGIN
    file_help = "conversations.json from the Claude.ai data export (Settings > Privacy > Export data)."

    def plan(self, data: Any, path: Path, access: Access, options: dict[str, Any]) -> ImportPlan:
        return parse_claude(data)

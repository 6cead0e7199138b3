"""Delete the call log's rows (API and MCP calls, telemetry) older than a number of days, as beat does daily."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.errors import ServiceError
from memory.services.telemetry import tool_events_prune


class Command(BaseCommand):
    help = "Delete API and MCP calls (the call log) older than --days (default TOOL_EVENTS_KEEP_DAYS)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=None, help="Keep this many days (0 keeps every call).")
        parser.add_argument("--dry-run", action="store_true", help="Count the calls that would be deleted.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = tool_events_prune(keep_days=options["days"], dry_run=options["dry_run"])
        except ServiceError as exc:
            raise CommandError(f"--days {exc.message}") from exc
        if result.cutoff is None:
            self.stdout.write("Every call is kept (0 days): nothing deleted.")
            return
        verb = "would be deleted" if result.dry_run else "deleted"
        self.stdout.write(f"{result.deleted} calls from before {result.cutoff:%Y-%m-%d %H:%M} UTC {verb}.")

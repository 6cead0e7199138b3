"""What the three history importers share: arguments, who and where to import for, and the summary they print.
Each command only says how its file becomes an ImportPlan (memory.importers)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.access import Access, access_for_user
from memory.errors import NotFound, ServiceError
from memory.importers.base import ImportFormatError, ImportPlan, read_json
from memory.management.commands._tokens import user_by_name
from memory.services.history_import import ImportStopped, ImportSummary, history_import

BAD_FILE = 2  # exit status for a file that is not the expected export (1 is every other refusal)
PIECES = ("conversation", "message", "transcript", "turn")


class ImportCommand(BaseCommand):
    origin = ""
    file_help = ""

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help=self.file_help)
        parser.add_argument("--user", required=True, help="Username or external id of the person whose history it is.")
        parser.add_argument(
            "--partition", default=None,
            help="Partition key to import into (it must exist). Default: the personal memory, memory:personal.",
        )  # fmt: skip
        parser.add_argument("--dry-run", action="store_true", help="Show what would be imported, and store nothing.")

    def plan(self, data: Any, path: Path, access: Access, options: dict[str, Any]) -> ImportPlan:
        raise NotImplementedError

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        try:
            data = read_json(path)
        except ImportFormatError as exc:
            raise CommandError(str(exc), returncode=BAD_FILE) from exc
        user = user_by_name(options["user"])
        try:
            access = access_for_user(user=user, partition_key=options["partition"])
        except NotFound as exc:
            raise CommandError(
                f"{user.username} has no partition {options['partition']!r}; create it first (POST /partitions/create)."
            ) from exc
        try:
            plan = self.plan(data, path, access, options)
            summary = history_import(access=access, plan=plan, origin=self.origin, dry_run=options["dry_run"])
        except ImportFormatError as exc:
            raise CommandError(f"{path}: {exc} Nothing was imported.", returncode=BAD_FILE) from exc
        except ImportStopped as stop:
            raise CommandError(_stopped(stop)) from stop
        except ServiceError as exc:
            raise CommandError(f"{_error(exc)} Nothing was imported.") from exc
        self._report(summary)

    def _report(self, summary: ImportSummary) -> None:
        if summary.dry_run:
            for source_id, title, pieces in summary.new:
                self.stdout.write(f"{source_id}\t{pieces}\t{title}")
        parts = [
            f"{'would import' if summary.dry_run else 'imported'}: {_counts(summary.imported)}",
            f"already there: {_counts(summary.present)}",
            f"skipped: {_skips(summary.skipped)}",
        ]
        if summary.dry_run:
            dates = (
                f"{summary.first:%Y-%m-%d} to {summary.last:%Y-%m-%d}" if summary.first and summary.last else "unknown"
            )
            parts.append(f"dates: {dates}")
            parts.append("dry run, nothing stored")
        self.stdout.write("; ".join(parts))


def _error(exc: ServiceError) -> str:
    details = f" {json.dumps(exc.details, ensure_ascii=False)}" if exc.details else ""
    return f"{exc.code}: {exc.message}{details}"


def _stopped(stop: ImportStopped) -> str:
    if not stop.kept.imported:
        return f"{_error(stop.error)} Stopped at {stop.at}; nothing was imported."
    return (
        f"{_error(stop.error)} Stopped at {stop.at}; imported before it: {_counts(stop.kept.imported)} "
        "(running the import again continues after them)."
    )


def _counts(counter: Counter[str]) -> str:
    shown = [f"{counter[piece]} {piece}{'' if counter[piece] == 1 else 's'}" for piece in PIECES if counter[piece]]
    return ", ".join(shown) or "nothing"


def _skips(counter: Counter[str]) -> str:
    counter = +counter  # reasons that never happened are not worth a word
    if not counter:
        return "nothing"
    reasons = ", ".join(
        f"{count} {reason}" for reason, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    return f"{sum(counter.values())} ({reasons})"

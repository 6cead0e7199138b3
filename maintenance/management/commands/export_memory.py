"""manage.py export_memory --user U [--partition K] [--output FILE]"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.access import Actor
from memory.errors import ServiceError
from memory.management.commands._tokens import user_by_name
from memory.models import Partition
from memory.services.export import export_prepare


class Command(BaseCommand):
    help = (
        "Export a user's memory as one versioned archive (a tar: manifest with checksums, JSON lines per kind, "
        "the original files). Written to --output, else to standard output. Restore it with import_memory."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="Username or external id of the owner.")
        parser.add_argument(
            "--partition", action="append", default=[], help="Export only this partition key (repeatable)."
        )
        parser.add_argument("--output", help="The archive file to write. Default: standard output.")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = user_by_name(options["user"])
        keys: list[str] = options["partition"]
        unknown = sorted(set(keys) - set(Partition.objects.filter(owner=owner).values_list("key", flat=True)))
        if unknown:
            raise CommandError(f"{owner.username} has no partition {', '.join(unknown)}.")
        try:
            prepared = export_prepare(owner=owner, partition_keys=keys or None, actor=Actor.system())
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        if not options["output"]:
            for piece in prepared.stream():
                sys.stdout.buffer.write(piece)
            sys.stdout.buffer.flush()
            return
        path = Path(options["output"])
        partial = path.with_name(path.name + ".partial")  # never a half-written archive under the real name
        with partial.open("wb") as handle:
            for piece in prepared.stream():
                handle.write(piece)
        partial.replace(path)
        self.stdout.write(f"{path} {path.stat().st_size}")

"""manage.py import_memory FILE --user U [--new-ids]"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.access import Actor
from memory.errors import ServiceError
from memory.management.commands._tokens import user_by_name
from memory.services.archive_import import archive_import


class Command(BaseCommand):
    help = (
        "Restore an archive made by export_memory into an empty account: checksums are verified before "
        "anything is written, everything goes in at once or not at all, and vectors are computed afresh. "
        "Prints the rows restored per kind as JSON."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The archive (.tar) to restore.")
        parser.add_argument("--user", required=True, help="Username or external id of the account to fill.")
        parser.add_argument(
            "--new-ids",
            action="store_true",
            help="Give every row a new id (consistently) when the archive's ids exist on this server already, "
            "e.g. because the account it came from is still here.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        owner = user_by_name(options["user"])
        try:
            with open(options["file"], "rb") as archive:
                result = archive_import(archive=archive, owner=owner, new_ids=options["new_ids"], actor=Actor.system())
        except OSError as exc:
            raise CommandError(f"Cannot read {options['file']}: {exc.strerror}.") from exc
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        answer = {"rows": result.rows, "blobs": result.blobs, "newIds": result.new_ids, "vectors": result.vectors}
        self.stdout.write(json.dumps(answer))

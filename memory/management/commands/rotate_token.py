"""Rotate a token: print the new secret; the old one is revoked at once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.access import Actor
from memory.errors import ValidationFailed
from memory.management.commands._tokens import token_by_reference
from memory.services.tokens import token_rotate


class Command(BaseCommand):
    help = "Rotate an access token (by id or prefix) and print the new secret."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("token", help="Token id or prefix.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            issued = token_rotate(actor=Actor.system(), token=token_by_reference(options["token"]))
        except ValidationFailed as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(issued.secret)

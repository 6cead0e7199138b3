"""Revoke a token by id or prefix; the next request made with it gets 401 TOKEN_REVOKED."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.access import Actor
from memory.management.commands._tokens import token_by_reference
from memory.services.tokens import token_revoke


class Command(BaseCommand):
    help = "Revoke an access token (by id tok_… or displayed prefix mem_…)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("token", help="Token id or prefix.")

    def handle(self, *args: Any, **options: Any) -> None:
        token = token_revoke(actor=Actor.system(), token=token_by_reference(options["token"]))
        self.stdout.write(token.pk)

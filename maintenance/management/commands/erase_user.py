"""Erase a whole account: the user, every partition with all its memory, and their files on disk."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.models import User
from memory.services.account_erasure import account_erase, account_inventory


class Command(BaseCommand):
    help = (
        "Erase a user and all their memory for good: partitions, sources and files, claims, memories, "
        "sessions, metrics, tokens and audit trail. Without --confirm, only print what would go."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", help="Username or external id (the userId chat hosts send).")
        parser.add_argument("--confirm", action="store_true", help="Erase; without it nothing changes.")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["user"]
        user = User.objects.filter(username=name).first() or User.objects.filter(external_id=name).first()
        if user is None:
            raise CommandError(f"No user {name!r}.")
        if not options["confirm"]:
            counts = account_inventory(user)
            self.stdout.write(" ".join(f"{kind}={number}" for kind, number in counts.items()))
            self.stdout.write("Nothing erased: add --confirm to erase.")
            return
        erased = account_erase(user=user)
        self.stdout.write(f"erased {erased.username} partitions={erased.partitions} blobs={erased.blobs}")

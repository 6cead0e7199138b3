"""`manage.py reap [--user U] [--apply] [--limit N]`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from maintenance.reaping import reap, reapable_claims
from memory.management.commands._tokens import user_by_name
from memory.models import User


class Command(BaseCommand):
    help = (
        "Reap unimportant claims nobody reads: active claims of importance at most REAP_MAX_IMPORTANCE not read "
        "for REAP_AFTER_DAYS leave recall (expires_at is set; nothing is deleted; pinned, user-stated and "
        "manual claims are kept). Without --apply it only counts. Prints one line per user with claims to reap."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="Only this user (username or external id). Default: every user.")
        parser.add_argument("--apply", action="store_true", help="Reap; without it nothing changes.")
        parser.add_argument("--limit", type=int, default=None, help="At most this many claims per user.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        if options["user"]:
            users = [user_by_name(options["user"])]
        else:
            owners = set(reapable_claims(timezone.now()).values_list("owner_id", flat=True))
            users = list(User.objects.filter(pk__in=owners).order_by("username"))
        for user in users:
            result = reap(owner_id=user.pk, apply=options["apply"], limit=options["limit"], sample=0)
            if result.dry_run:
                self.stdout.write(f"{user.username}: {result.candidates} claim(s) to reap (dry run; add --apply)")
            else:
                self.stdout.write(f"{user.username}: {result.reaped} claim(s) reaped")

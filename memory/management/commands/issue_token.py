"""Mint an access token and print only its secret (for scripts: TOKEN=$(manage.py issue_token ...))."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from memory.access import Actor
from memory.errors import ValidationFailed
from memory.management.commands._tokens import user_by_name
from memory.models import Scope, Surface, ToolProfile
from memory.services.tokens import token_issue

MAX_DAYS = 36500  # a hundred years; beyond it the date overflows long before it would matter


class Command(BaseCommand):
    help = "Issue an access token for a user and print its secret (shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="Username or external id of the owner.")
        parser.add_argument("--label", required=True, help="What the token is for, e.g. 'Claude Desktop'.")
        parser.add_argument("--scopes", default="read,write", help=f"Comma-separated: {','.join(Scope.values)}.")
        parser.add_argument(
            "--partition", action="append", default=[], dest="partitions",
            help="Limit the token to this partition key (repeatable). Default: all of the user's partitions.",
        )  # fmt: skip
        parser.add_argument("--default-partition", default="", help="Partition used when a request names none.")
        parser.add_argument("--profile", default=ToolProfile.ASSISTANT, choices=ToolProfile.values)
        parser.add_argument("--surface", default=Surface.REST, choices=Surface.values)
        parser.add_argument("--allow-query-token", action="store_true", help="Also accept it as ?token=.")
        parser.add_argument(
            "--acts-for", action="append", default=[],
            help="For a chat host token (--surface host): a user it may act for (repeatable).",
        )  # fmt: skip
        parser.add_argument(
            "--expires-in-days", type=int, default=None,
            help=f"Days until the token stops working (1 to {MAX_DAYS}). Default: it does not expire.",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        owner = user_by_name(options["user"])
        days = options["expires_in_days"]
        if days is not None and not 1 <= days <= MAX_DAYS:
            # 0 used to mean "never": a token meant to be short-lived must not silently live forever.
            raise CommandError(
                f"--expires-in-days must be 1 to {MAX_DAYS}; leave it out for a token that does not expire."
            )
        try:
            issued = token_issue(
                actor=Actor.system(),
                owner=owner,
                label=options["label"],
                scopes=[scope.strip() for scope in options["scopes"].split(",") if scope.strip()],
                surface=options["surface"],
                profile=options["profile"],
                partition_keys=options["partitions"],
                default_partition_key=options["default_partition"],
                allow_query_token=options["allow_query_token"],
                acts_for=[user_by_name(name) for name in options["acts_for"]],
                expires_at=timezone.now() + timedelta(days=days) if days is not None else None,
            )
        except ValidationFailed as exc:
            raise CommandError(f"{exc.message} {exc.details}") from exc
        self.stdout.write(issued.secret)

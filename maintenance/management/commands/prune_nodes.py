"""`manage.py prune_nodes --user U [--partition K] [--aggressiveness A | --min-score S] [--apply]`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from maintenance.pruning import (
    MAX_IDLE_DAYS,
    MAX_PAGE,
    Assessment,
    Thresholds,
    prune_stale_apply,
    prune_stale_preview,
)
from maintenance.scoring import AGGRESSIVENESS, min_score_for
from memory.access import Access, Actor, access_for_user
from memory.errors import ServiceError
from memory.models import User


def aggressiveness(text: str) -> str | float:
    if text in AGGRESSIVENESS:
        return text
    try:
        level = float(text)
    except ValueError:
        level = -1.0
    if not 0 <= level <= 1:
        raise CommandError("--aggressiveness must be low, medium, high or a number from 0 to 1.")
    return level


class Command(BaseCommand):
    help = (
        "Stale-node pruning for one user: lists the nodes that would be pruned (id, score, type, label, why), "
        "highest score first. With --apply it deletes exactly the listed nodes that still qualify."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="The user's external id or username.")
        parser.add_argument("--partition", help="A partition key; default: memory:personal.")
        parser.add_argument("--aggressiveness", default="medium", help="low, medium, high, or 0 to 1.")
        parser.add_argument("--min-score", type=float, help="The score floor (overrides --aggressiveness).")
        parser.add_argument("--min-idle-days", type=int, default=30, help="Never prune nodes seen more recently.")
        parser.add_argument("--include-reference", action="store_true", help="Also prune reference nodes.")
        parser.add_argument("--apply", action="store_true", help="Delete the listed nodes (default: only list).")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(Q(external_id=options["user"]) | Q(username=options["user"])).first()
        if user is None:
            raise CommandError(f"No user {options['user']!r}.")
        floor = options["min_score"]
        if floor is not None and not 0 <= floor <= 1:
            raise CommandError("--min-score must be from 0 to 1.")
        if not 0 <= options["min_idle_days"] <= MAX_IDLE_DAYS:
            raise CommandError(f"--min-idle-days must be from 0 to {MAX_IDLE_DAYS}.")
        thresholds = Thresholds(
            min_score=floor if floor is not None else min_score_for(aggressiveness(options["aggressiveness"])),
            min_idle_days=options["min_idle_days"],
            include_reference=options["include_reference"],
        )
        try:
            access = access_for_user(user=user, partition_key=options["partition"], acting=Actor.system())
            listed = self.preview(access, thresholds)
            if options["apply"] and listed:
                result = prune_stale_apply(access=access, node_ids=[item.node.pk for item in listed],
                                           thresholds=thresholds)  # fmt: skip
                self.stdout.write(f"deleted {len(result.deleted)}, skipped {len(result.skipped)}")
                for skipped in result.skipped:
                    self.stdout.write(f"skipped {skipped.node_id}: {skipped.reason}")
        except ServiceError as exc:
            raise CommandError(exc.message) from exc

    def preview(self, access: Access, thresholds: Thresholds) -> list[Assessment]:
        listed: list[Assessment] = []
        cursor = None
        while True:
            page = prune_stale_preview(access=access, thresholds=thresholds, limit=MAX_PAGE, cursor=cursor)
            listed.extend(page.nodes)
            cursor = page.next_cursor
            if cursor is None:
                break
        self.stdout.write(f"{len(listed)} candidate(s), minScore {thresholds.min_score}")
        for item in listed:
            self.stdout.write(
                f"{item.node.pk}\t{item.score}\t{item.node.type}\t{item.node.label}\t{item.as_dict()['reason']}"
            )
        return listed

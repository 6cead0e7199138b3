"""`manage.py prune_nodes`: prints the preview, and with --apply deletes exactly the previewed nodes."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory.models import MemoryEvent, Node, User
from tests.factories import ClaimFactory, NodeFactory, PartitionFactory

pytestmark = pytest.mark.django_db


def old(user: User, label: str, days: int = 400, **fields: object) -> Node:
    node = NodeFactory.create(owner=user, label=label, **fields)
    Node.objects.filter(pk=node.pk).update(last_seen_at=timezone.now() - timedelta(days=days))
    return node


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command("prune_nodes", *args, stdout=out)
    return out.getvalue().splitlines()


def test_the_command_previews_then_applies_the_previewed_set(alice: User) -> None:
    jorge, bram = old(alice, "Jorge", days=500), old(alice, "Bram", days=200)
    fresh = old(alice, "Lena", days=3)
    # Bram is linked to Lena by an inferred claim: 0.40·0.55 + 0.25·0.5 + 0.20·1 = 0.54, between high and medium.
    ClaimFactory.create(owner=alice, subject=bram, object_node=fresh, origin="assistant_inferred",
                        statement="Bram knows Lena.")  # fmt: skip
    lines = run("--user", "alice")
    assert lines[0] == "1 candidate(s), minScore 0.65"
    assert lines[1] == f"{jorge.pk}\t1.0\tPerson\tJorge\tnot seen for 16 months; linked to nothing; no claims"
    assert Node.objects.filter(owner=alice).count() == 3

    lines = run("--user", "alice", "--aggressiveness", "high", "--apply")
    assert lines[0] == "2 candidate(s), minScore 0.525"
    assert [line.split("\t")[0] for line in lines[1:3]] == [jorge.pk, bram.pk]
    assert lines[3:] == ["deleted 2, skipped 0"]
    assert list(Node.objects.filter(owner=alice).values_list("pk", flat=True)) == [fresh.pk]
    assert MemoryEvent.objects.filter(action="node.prune", actor_kind="system").count() == 2


def test_the_command_works_in_one_partition_and_refuses_bad_options(alice: User) -> None:
    apollo = PartitionFactory.create(owner=alice, key="project:apollo")
    theirs = old(alice, "Apollo contact", partition=apollo)
    mine = old(alice, "Personal contact")
    assert run("--user", "alice", "--partition", "project:apollo", "--min-score", "0.9", "--apply")[-1] == (
        "deleted 1, skipped 0"
    )
    assert not Node.objects.filter(pk=theirs.pk).exists() and Node.objects.filter(pk=mine.pk).exists()
    for args, message in [
        (["--user", "nobody"], "No user"),
        (["--user", "alice", "--aggressiveness", "wild"], "--aggressiveness"),
        (["--user", "alice", "--min-score", "3"], "--min-score"),
        (["--user", "alice", "--min-idle-days", "-2"], "--min-idle-days"),
        (["--user", "alice", "--min-idle-days", "800000"], "--min-idle-days must be from 0 to 36500"),  # no overflow
        (["--user", "alice", "--partition", "project:none"], "No such partition"),
    ]:
        with pytest.raises(CommandError, match=message):
            run(*args)
    assert Node.objects.filter(pk=mine.pk).exists()

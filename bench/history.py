"""A year of synthetic history for one user, then the stale-node prune on it (issue 15's "Done when").

    .venv/bin/python bench/history.py [--seed 15] [--messages 300] [--keep]

Twelve months of conversations (the same for the same seed) go through the real ingestion service and one real
Celery worker (convert, chunk, embed, extract with the default rules, reconcile), each message dated in its
month: people the user works with all year, people met once and never again, neighbours who move (a fact that
supersedes the old one), lunches (working context that expires), tasks that get done and tasks left open,
people only other speakers name (nodes known from nobody's claim: the default rules extractor makes no inferred
claims). Then, as a user tidying names would, a few nodes are renamed to the label another node has (exact
duplicates for the dedup sweep).

It then previews the prune at medium aggressiveness (every page), applies exactly the previewed ids, checks
that precisely those nodes are gone, and prints the numbers and a sample of reasons. Uses its own data
directory (var/bench-history) and its own user (`history-<seed>`, recreated on each run).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-history"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

COLLEAGUES = ["Priya", "Marcel", "Ilse", "Tom", "Sofia", "Pieter"]  # mentioned all year
ONCE = ["Jorge", "Lena", "Bram", "Kees", "Anouk", "Ruben", "Femke", "Daan", "Sanne", "Milan", "Noor", "Lars",
        "Yara", "Thijs", "Eva", "Joris", "Maud", "Sem", "Lotte", "Gijs"]  # fmt: skip
NEIGHBOURS = ["Anna", "Wim", "Hanna", "Koen"]
ORGS = ["Initech", "Falcon Labs", "Northwind", "Acme"]
CITIES = ["Utrecht", "Delft", "Leiden", "Gent", "Porto", "Berlin", "Haarlem", "Zwolle"]
THINGS = ["budget", "slides", "roadmap", "invoice", "report", "contract", "garden plan", "test plan"]
CHATTER = ["Sounds good.", "Let me think about that.", "Thanks, noted.", "What else is on your list?"]


def history(rng: random.Random, months: int, per_month: int, now: datetime) -> list[tuple[str, list[dict]]]:
    """Conversations (id, messages) over `months` months, each message a dict for MessageIn."""
    conversations = []
    open_tasks: list[tuple[str, str]] = []
    homes = {name: rng.choice(CITIES) for name in NEIGHBOURS}
    once = list(ONCE)
    rng.shuffle(once)
    for month in range(months):
        start = now - timedelta(days=30 * (months - month))
        for n in range(per_month):
            lines: list[tuple[str, str, str]] = []  # (role, speaker, text)
            colleague = rng.choice(COLLEAGUES)
            kind = rng.randrange(7)
            if kind == 0:
                lines.append(("user", "", f"My colleague {colleague} works at {rng.choice(ORGS)}."))
            elif kind == 1 and once:
                lines.append(("user", "", f"I met {once.pop()} at the conference in {rng.choice(CITIES)}."))
            elif kind == 2:
                lines.append(("user", "", f"I had lunch with {rng.choice([colleague, *once[:3]])} yesterday."))
            elif kind == 3:
                name = rng.choice(NEIGHBOURS)
                if rng.random() < 0.3:
                    homes[name] = rng.choice([city for city in CITIES if city != homes[name]])
                lines.append(("user", "", f"My neighbour {name} lives in {homes[name]}."))
            elif kind == 4:
                thing = rng.choice(THINGS)
                lines.append(("user", "", f"I'll send the {thing} to {colleague} by Friday."))
                open_tasks.append((thing, colleague))
            elif kind == 5 and open_tasks:
                thing, who = open_tasks.pop(rng.randrange(len(open_tasks)))
                lines.append(("user", "", f"I sent the {thing} to {who}."))
            else:
                speaker = once.pop() if once and rng.random() < 0.5 else colleague
                lines.append(("other", speaker, f"I'll look at the {rng.choice(THINGS)} next week."))
            lines.append(("assistant", "", rng.choice(CHATTER)))
            if rng.random() < 0.5:
                lines.append(
                    ("user", "", rng.choice(["I prefer tea over coffee.", "I prefer mornings for deep work."]))
                )
            day = start + timedelta(days=rng.randrange(28), hours=9 + rng.randrange(8))
            messages = [
                {"id": f"m{index}", "role": role, "speaker": speaker, "content": text,
                 "timestamp": day + timedelta(minutes=index)}
                for index, (role, speaker, text) in enumerate(lines)
            ]  # fmt: skip
            conversations.append((f"month{month:02d}-chat{n:03d}", messages))
    return conversations


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--messages", type=int, default=300, help="About this many messages in all.")
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--keep", action="store_true", help="Do not apply the prune (leave the history as made).")
    options = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.utils import timezone

    from config.celery import app
    from config.embedded import ensure_started
    from maintenance.dedup import duplicate_groups
    from maintenance.orphans import orphans
    from maintenance.pruning import Thresholds, prune_stale_apply, prune_stale_preview
    from maintenance.scoring import min_score_for
    from memory.access import Actor, access_for_user
    from memory.models import Claim, Node, Operation, User
    from memory.services.ingestion import ConversationIn, MessageIn, ingest_conversation
    from memory.services.nodes import node_update

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    username = f"history-{options.seed}"
    User.objects.filter(username=username).delete()
    user = User.objects.create(username=username)
    access = access_for_user(user=user, acting=Actor.system())

    rng = random.Random(options.seed)  # noqa: S311 (reproducible test data, not secrets)
    per_month = max(1, options.messages // (options.months * 3))
    conversations = history(rng, options.months, per_month, timezone.now())
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING", "--concurrency", "1",
         "--hostname", "history@%h", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env={**os.environ}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while not app.control.ping(timeout=0.5):
            time.sleep(0.2)
        started = time.perf_counter()
        operations = []
        for conversation_id, messages in conversations:
            receipt = ingest_conversation(
                access=access,
                conversation=ConversationIn(id=conversation_id, messages=[MessageIn(**item) for item in messages]),
            )
            operations.append(receipt.operation.pk)
        while Operation.objects.filter(pk__in=operations, status__in=["queued", "processing"]).exists():
            time.sleep(0.2)
        ingest_s = time.perf_counter() - started
        failed = Operation.objects.filter(pk__in=operations, status="failed").count()
    finally:
        worker.terminate()
        worker.wait(timeout=60)

    # A user tidying names: three people renamed to a name another node already has.
    people = list(Node.objects.filter(owner=user, type="Person", merged_into__isnull=True).order_by("pk"))
    picks = random.Random(options.seed + 1).sample(people, k=min(6, len(people) - len(people) % 2))  # noqa: S311
    for keep, rename in zip(picks[::2], picks[1::2], strict=True):
        node_update(access=access, node_id=rename.pk, label=keep.label)

    message_count = sum(len(items) for _, items in conversations)
    nodes_before = set(Node.objects.filter(owner=user).values_list("pk", flat=True))
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"history: seed {options.seed}, {options.months} months, {len(conversations)} conversations, "
          f"{message_count} messages, ingested in {ingest_s:.1f} s ({failed} failed)")  # fmt: skip
    by_type: dict[str, int] = {}
    for kind in Node.objects.filter(owner=user).values_list("type", flat=True):
        by_type[kind] = by_type.get(kind, 0) + 1
    claims = Claim.objects.filter(owner=user).count()
    print(f"nodes: {len(nodes_before)} {dict(sorted(by_type.items()))}; claims: {claims}")
    print(f"orphans: {len(orphans(access))}; exact-duplicate groups: {len(duplicate_groups(access))}")

    thresholds = Thresholds(min_score=min_score_for("medium"))
    started = time.perf_counter()
    listed, cursor, pages = [], None, 0
    while True:
        page = prune_stale_preview(access=access, thresholds=thresholds, limit=50, cursor=cursor)
        listed += page.nodes
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    preview_ms = (time.perf_counter() - started) * 1000
    print(f"prune preview (medium, minScore {thresholds.min_score}): {len(listed)} candidates in {pages} page(s) "
          f"of 50, {preview_ms:.0f} ms in all")  # fmt: skip
    for item in listed[:8]:
        print(f"  {item.score:.3f}  {item.node.type:<12} {item.node.label:<28} {item.as_dict()['reason']}")
    if options.keep:
        return
    ids = [item.node.pk for item in listed]
    started = time.perf_counter()
    result = prune_stale_apply(access=access, node_ids=ids, thresholds=thresholds)
    apply_ms = (time.perf_counter() - started) * 1000
    gone = nodes_before - set(Node.objects.filter(owner=user).values_list("pk", flat=True))
    print(f"prune apply: deleted {len(result.deleted)}, skipped {len(result.skipped)}, claims erased "
          f"{result.claims_erased}, {apply_ms:.0f} ms")  # fmt: skip
    print(f"removed exactly the previewed set: {gone == set(ids) == set(result.deleted)}")


if __name__ == "__main__":
    main()

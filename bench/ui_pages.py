"""The web UI's pages on a large memory: every page a person reads, through a real uvicorn, signed in.

    MEMORY_DATA_DIR=var/bench-search/claims-100000 .venv/bin/python bench/ui_pages.py [--user bench-search]
        [--requests 15] [--rounds 3]

On an existing store (default: bench/search_latency.py's 100,000 claims, its user `bench-search`; build it first
with `bench/search_latency.py --sizes 100000`). Each page is asked `--requests` times per round, one request at a
time on a kept-alive connection with the session of a signed-in person (Django's own login, the session written to
the store as any sign-in writes it), every page in turn within a round. Printed per page: the median over rounds of
its p50 and p95 round trip, and, from one request of the same page in this process through Django's test client,
the SQL statements it sent and the slowest one's ms. Pages that need an object (a claim, an entity, a source) take
the one with the most evidence, the most claims, the most evidence; the claims list is also asked at its second page
(the cursor of the first) and with each filter a person can set.

search_latency.py's store holds claims, entities, sources (conversations) and evidence only: the pages of
commitments, metrics, activity and review show what little it has, and are here for their fixed cost.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from contextlib import ExitStack
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-search" / "claims-100000"))

from bench.lived_in import lived_in  # noqa: E402
from bench.report import headline, percentile  # noqa: E402

NEXT_CURSOR = re.compile(r"[?&]cursor=([^\"&]+)")


def pages(user: Any, firsts: dict[str, str]) -> list[tuple[str, str]]:
    """(name, path) of every page a person reads, with the store's busiest objects for the detail pages; `firsts`:
    the first page of each list with a second ("claims", "activity"), for its cursor."""
    from django.db.models import Count

    from memory.models import Claim, Node, Source
    from metrics.models import MetricDefinition

    claim = Claim.objects.filter(owner=user).annotate(n=Count("evidence")).order_by("-n", "id").first()
    node = Node.objects.filter(owner=user).annotate(n=Count("claims")).order_by("-n", "id").first()
    source = Source.objects.filter(owner=user).annotate(n=Count("evidence")).order_by("-n", "id").first()
    metric = MetricDefinition.objects.filter(owner=user).annotate(n=Count("observations")).order_by("-n").first()
    word = quote(claim.statement.split()[-1].strip(".,") if claim else "project")
    year_ago = date.today() - timedelta(days=365)
    found = [
        ("dashboard", "/ui/"),
        ("search", f"/ui/search?q={word}"),
        ("claims", "/ui/claims/"),
        ("claims, second page", ""),
        ("claims, active", "/ui/claims/?status=active"),
        ("claims, retracted", "/ui/claims/?status=retracted"),
        ("claims, pinned", "/ui/claims/?pinned=yes"),
        ("claims, to reverify", "/ui/claims/?reverify=yes"),
        ("claims, text", f"/ui/claims/?text={word}"),
        ("claims, kind preference", "/ui/claims/?kind=preference"),
        ("entities", "/ui/entities/"),
        ("review", "/ui/review/"),
        ("commitments", "/ui/commitments/"),
        ("metrics", "/ui/metrics/"),
        ("sources", "/ui/sources/"),
        ("tokens", "/ui/tokens/"),
        ("activity", "/ui/activity/"),
        ("activity, second page", ""),
        ("activity, a review decision", "/ui/activity/?action=review.accept"),
        ("activity, readings", "/ui/activity/?target=observation"),
        ("activity, by you", "/ui/activity/?who=you"),
        ("activity, a month a year ago", f"/ui/activity/?since={year_ago}&until={year_ago + timedelta(days=30)}"),
        ("maintenance", "/ui/maintenance/"),
        ("maintenance, stale", "/ui/maintenance/stale/"),
        ("maintenance, orphans", "/ui/maintenance/orphans/"),
        ("maintenance, duplicates", "/ui/maintenance/duplicates/"),
        ("maintenance, reaping", "/ui/maintenance/reaping/"),
        ("maintenance, recovery", "/ui/maintenance/recovery/"),
        ("maintenance, erase preview", "/ui/maintenance/erase/?partition=memory:personal"),
    ]
    if claim:
        found.append(("a claim", f"/ui/claims/{claim.pk}/"))
    if node:
        found.append(("an entity (most claims)", f"/ui/entities/{node.pk}/"))
    if source:
        found.append(("a source", f"/ui/sources/{source.pk}/"))
    if metric:
        found.append(("a metric (most readings)", f"/ui/metrics/{metric.slug}/"))
    return [(name, path or _second_page(name, firsts)) for name, path in found]


def admin_pages(user: Any) -> list[tuple[str, str]]:
    """(name, path) of the admin's lists of the large tables, as a staff member opens and filters them."""
    from memory.models import Claim

    claim = Claim.objects.filter(owner=user).order_by("-recorded_at").first()
    return [
        ("admin: API and MCP calls", "/admin/memory/toolevent/"),
        ("admin: calls, a tool", "/admin/memory/toolevent/?tool=claim.list"),
        ("admin: calls, client errors", "/admin/memory/toolevent/?outcome=client_error"),
        ("admin: changes", "/admin/memory/memoryevent/"),
        ("admin: changes, an action", "/admin/memory/memoryevent/?action=review.accept"),
        ("admin: changes, a claim's", f"/admin/memory/memoryevent/?q={claim.pk if claim else 'claim'}"),
        ("admin: claims", "/admin/memory/claim/"),
        ("admin: claims, searched", "/admin/memory/claim/?q=project"),
        ("admin: entities", "/admin/memory/node/"),
        ("admin: sources", "/admin/memory/source/"),
        ("admin: readings", "/admin/metrics/observation/"),
        ("admin: users", "/admin/memory/user/"),
        ("admin: access tokens", "/admin/memory/accesstoken/"),
    ]


def _second_page(name: str, firsts: dict[str, str]) -> str:
    """The address of a list's second page, from the cursor in its first page ("" if it has none)."""
    listed = name.removesuffix(", second page")
    cursor = NEXT_CURSOR.search(firsts.get(listed, ""))
    return f"/ui/{listed}/?cursor={cursor.group(1)}" if name != listed and cursor else ""


def statements_of(client: Any, path: str) -> tuple[int, int, float]:
    """One in-process request: its status, the SQL statements it sent and the slowest one's ms."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        status = client.get(path).status_code
    slowest = max((float(query["time"]) for query in captured.captured_queries), default=0.0)
    return status, len(captured.captured_queries), slowest * 1000


def _cookies(client: Any) -> dict[str, str]:
    from django.conf import settings

    return {settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME].value}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--user", default="bench-search")
    parser.add_argument("--requests", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=float, default=3.0, help="API and MCP calls logged per claim (history)")
    parser.add_argument("--no-history", action="store_true", help="time the store as built, without its history")
    options = parser.parse_args()

    import django

    django.setup()
    import httpx
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from bench.serving import served
    from config.embedded import ensure_started
    from memory.models import Claim, User

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)  # a store built by an older checkout gets this one's indexes
    user = User.objects.filter(username=options.user).first()
    if user is None:
        raise SystemExit(f"no user {options.user!r} in {settings.DATA_DIR}: build the store first (see above)")
    if not options.no_history:
        if not any(part.startswith("bench-") for part in settings.DATA_DIR.parts):
            raise SystemExit(f"{settings.DATA_DIR} is not a benchmark's store: its history is not replaced there")
        added = lived_in(user, calls=options.calls)
        print(f"history added: {added}" if added else "history kept from an earlier run", flush=True)
    staff, _ = User.objects.get_or_create(username="bench-admin", defaults={"is_staff": True, "is_superuser": True})
    client, admin = Client(HTTP_HOST="127.0.0.1"), Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    admin.force_login(staff)
    firsts = {name: client.get(f"/ui/{name}/").content.decode() for name in ("claims", "activity")}
    found = [(name, path, client) for name, path in pages(user, firsts) if path]
    found += [(name, path, admin) for name, path in admin_pages(user)]
    claims = Claim.objects.filter(owner=user).count()
    load = [os.getloadavg()[0]]
    print(f"{user.username}: {claims:,} claims; {len(found)} pages; load average {load[0]:.2f}", flush=True)

    counted = {name: statements_of(asker, path) for name, path, asker in found}
    times: dict[str, list[list[float]]] = {name: [] for name, _, _ in found}
    with served() as url, ExitStack() as browsers:
        signed_in = {
            asker: browsers.enter_context(httpx.Client(base_url=url, cookies=_cookies(asker), timeout=120))
            for asker in (client, admin)
        }
        for _name, path, asker in found:  # once each before the clock: the server's first use of each view
            signed_in[asker].get(path)
        for _ in range(options.rounds):
            for name, path, asker in found:
                spent = []
                for _ in range(options.requests):
                    began = time.perf_counter()
                    answer = signed_in[asker].get(path)
                    spent.append((time.perf_counter() - began) * 1000)
                    if answer.status_code != 200:
                        raise SystemExit(f"{path}: {answer.status_code}")
                times[name].append(spent)
            load.append(os.getloadavg()[0])

    print(f"\n{options.requests} requests a page a round; p95 of so few is near the slowest of them")
    print("\n| page | p50 ms | p95 ms | status | SQL statements | slowest statement ms |")
    print("|---|---:|---:|---:|---:|---:|")
    p50s = {}
    for name, _, _ in found:
        p50s[name] = statistics.median(statistics.median(spent) for spent in times[name])
        p95 = statistics.median(percentile(spent, 95) for spent in times[name])
        status, statements, slowest = counted[name]
        print(f"| {name} | {p50s[name]:.1f} | {p95:.1f} | {status} | {statements} | {slowest:.1f} |")
    slowest_page = max(p50s, key=p50s.__getitem__)
    print(f"\nload average {' -> '.join(f'{value:.2f}' for value in load)}")
    headline(f"UI pages at {claims:,} claims: the slowest page's p50 ({slowest_page})", p50s[slowest_page], "ms")
    headline(f"UI pages at {claims:,} claims: median page p50", statistics.median(p50s.values()), "ms")


if __name__ == "__main__":
    main()

"""What a memory in use has besides its claims: the audit trail, the call log and metrics, added to a benchmark store.

Not a benchmark: bench/ui_pages.py adds these rows to the store it times (once; a store rebuilt since gets them
again), so the activity page, the dashboard's latest changes, the review decisions, coordination health, the
metrics pages and the admin's lists read tables of a size that matches the claims. Per claim, as the pipeline and
the assistants leave them (`memory.services.reconcile`, `memory.services.ingestion`, `memory.api.base`):

- the audit trail: a `claim.extract` per claim (the pipeline), a `source.ingest` per source (a token, REST or MCP),
  and the person's rarer changes (pins, confirmations, corrections, retractions, review decisions, verdicts: about 4
  in 100 claims), each dated after the claim it is about;
- the call log: `--calls` ToolEvents per claim (searches mostly, some saves and errors), over the store's two years,
  more of them lately;
- metrics: 20 definitions and half a reading per claim, each with its `metric.observe` audit row.

No chunks, tasks or claims are added: bench/search_latency.py reuses the store only while its claims are the ones
it built.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any

from ulid import ULID

SEED = 18
METRICS = [
    ("weight", "Body weight", "kg"), ("steps", "Steps", ""), ("sleep", "Sleep", "h"),
    ("resting-hr", "Resting heart rate", "bpm"),
    ("run", "Running distance", "km"), ("coffee", "Coffees", ""), ("focus", "Focus hours", "h"), ("mood", "Mood", ""),
    ("water", "Water", "l"), ("reading", "Pages read", ""), ("spend", "Spending", "EUR"), ("commute", "Commute", "min"),
    ("meetings", "Meetings", ""), ("pushups", "Push-ups", ""), ("weight-lifted", "Weight lifted", "kg"),
    ("screen", "Screen time", "h"), ("calories", "Calories", "kcal"), ("bp-sys", "Blood pressure", "mmHg"),
    ("glucose", "Glucose", "mmol/l"), ("temperature", "Body temperature", "C"),
]  # fmt: skip
# The person's own changes, per claim (the rest is the pipeline's `claim.extract`).
CHANGES = [
    ("claim.pin", "ui", 0.004), ("claim.unpin", "ui", 0.001), ("claim.confirm", "ui", 0.01),
    ("claim.correct", "ui", 0.006), ("claim.retract", "mcp", 0.008), ("claim.flag_reverification", "pipeline", 0.003),
    ("claim.verdict", "rest", 0.002), ("review.accept", "ui", 0.001), ("review.keep_old", "ui", 0.0008),
    ("review.keep_both", "ui", 0.0004), ("memory.save", "mcp", 0.005),
]  # fmt: skip
# What each surface's calls name (memory.api's endpoints, mcp_bridge.catalog's tools), and how often.
TOOLS = {
    "rest": [("query.search", 0.45), ("ingest.conversation", 0.25), ("context.bootstrap", 0.1), ("claim.list", 0.05),
             ("memory.save", 0.05), ("query.recent_changes", 0.05), ("whoami", 0.05)],
    "mcp": [("search_memory", 0.6), ("save_memory", 0.15), ("bootstrap_memory", 0.1), ("memory_get", 0.1),
            ("record_metric", 0.05)],
}  # fmt: skip


def lived_in(user: Any, *, calls: float = 3.0) -> dict[str, Any]:
    """Give `user`'s claims their history, unless they have it already. Returns the rows added (none if kept)."""
    from django.db import connection

    from memory.models import Claim, MemoryEvent, Partition, ToolEvent
    from metrics.models import Observation

    claims = Claim.objects.filter(owner=user).count()
    if MemoryEvent.objects.filter(owner=user, action="claim.extract").count() == claims:
        return {}
    began = time.perf_counter()
    with connection.cursor() as cursor:  # this data directory belongs to the benchmark alone
        for table in ("memory_memoryevent", "memory_toolevent", "metrics_observation", "metrics_metricdefinition"):
            cursor.execute(f"DELETE FROM {table} WHERE owner_id = %s", [user.pk])  # noqa: S608 (fixed names)
    partition = Partition.objects.get(owner=user, key="memory:personal")
    tokens = _tokens(user)
    definitions = _definitions(user, partition)
    added: dict[str, Any] = {
        "metrics": len(definitions),
        "readings": _written(Observation, _readings(user, definitions, claims // 2)),
        "memory events": _written(MemoryEvent, _audit_trail(user, partition, tokens)),  # the readings' too
        "tool events": _written(ToolEvent, _calls(user, tokens, round(claims * calls))),
    }
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memory_memoryevent, memory_toolevent, metrics_observation")
    added["seconds"] = round(time.perf_counter() - began, 1)
    return added


def _written(model: Any, rows: Iterable[Any], size: int = 10_000) -> int:
    """`rows` (unsaved instances of `model`) written with COPY, `size` at a time; how many."""
    from bench.bulk_load import copy_insert

    written, stream = 0, iter(rows)
    while batch := list(islice(stream, size)):
        copy_insert(model, batch)
        written += len(batch)
    return written


def _event(user: Any, partition: Any, token: Any, moment: datetime, **fields: Any) -> Any:
    from memory.models import MemoryEvent

    surface = fields["surface"]
    kind = "token" if surface in ("rest", "mcp") else "system" if surface == "pipeline" else "user"
    return MemoryEvent(
        id=f"evt_{str(ULID.from_datetime(moment)).lower()}", owner=user, partition=partition, actor_kind=kind,
        actor_user=user if kind == "user" else None, actor_token=token if kind == "token" else None,
        created_at=moment, **fields,
    )  # fmt: skip


def _tokens(user: Any) -> list[Any]:
    from memory.access import Actor
    from memory.models import AccessToken
    from memory.services.tokens import token_issue

    kept = list(AccessToken.objects.filter(owner=user, label__startswith="bench ").order_by("label"))
    return kept or [
        token_issue(actor=Actor.person(user, "ui"), owner=user, label=f"bench {name}", surface=surface).token
        for name, surface in (("claude", "mcp"), ("chat host", "rest"), ("cursor", "mcp"))
    ]


def _audit_trail(user: Any, partition: Any, tokens: list[Any]) -> Iterator[Any]:
    """A source's ingestion, each claim's extraction and the person's changes to some, each reading's recording."""
    from memory.models import Claim, Source
    from metrics.models import Observation

    rng = random.Random(SEED)  # noqa: S311 (reproducible test data, not secrets)
    for source_id, moment in Source.objects.filter(owner=user).values_list("id", "occurred_at").iterator():
        yield _event(user, partition, rng.choice(tokens), moment, surface=rng.choice(("rest", "mcp")),
                     action="source.ingest", target_type="source", target_id=source_id,
                     after={"kind": "conversation", "version": 1, "messages": 40})  # fmt: skip
    rows = Claim.objects.filter(owner=user).values_list("id", "kind", "status", "recorded_at").order_by()
    for claim_id, kind, status, recorded in rows.iterator(chunk_size=5000):
        yield _event(user, partition, None, recorded, surface="pipeline", action="claim.extract",
                     target_type="claim", target_id=claim_id,
                     after={"kind": kind, "status": status, "extractor": "bench@1"})  # fmt: skip
        for action, surface, share in CHANGES:
            if rng.random() < share:
                later = recorded + timedelta(days=rng.uniform(0.01, 60))
                yield _event(user, partition, rng.choice(tokens), later, surface=surface, action=action,
                             target_type="claim", target_id=claim_id,
                             before={"status": "active"}, after={"status": status})  # fmt: skip
    readings = Observation.objects.filter(owner=user).values_list("id", "value", "occurred_at").order_by()
    for reading_id, value, moment in readings.iterator(chunk_size=5000):
        yield _event(user, partition, tokens[0], moment, surface="mcp", action="metric.observe",
                     target_type="observation", target_id=reading_id, after={"value": value})  # fmt: skip


def _calls(user: Any, tokens: list[Any], count: int) -> Iterator[Any]:
    """`count` calls over two years, more of them lately (a call's age is 730 days times a uniform draw to the
    power 1.5), in the order they were made: ids follow time, as the writer numbers them."""
    from memory.models import ToolEvent

    rng = random.Random(SEED + 1)  # noqa: S311
    now = datetime.now(UTC)
    tools = {surface: tuple(zip(*named, strict=True)) for surface, named in TOOLS.items()}
    for moment in _moments(rng, now, count, days=730):
        token = rng.choice(tokens)
        failed = rng.random()
        names, weights = tools[token.surface]
        yield ToolEvent(
            owner=user, token=token, surface=token.surface, tool=rng.choices(names, weights)[0],
            partition_key="memory:personal", status_code=500 if failed < 0.001 else 400 if failed < 0.02 else 200,
            outcome="server_error" if failed < 0.001 else "client_error" if failed < 0.02 else "ok",
            error_code="" if failed >= 0.02 else "validation_error", duration_ms=rng.randint(3, 80),
            request_bytes=rng.randint(80, 4000), response_bytes=rng.randint(200, 20000), created_at=moment,
        )  # fmt: skip


def _moments(rng: random.Random, now: datetime, count: int, *, days: int) -> Iterator[datetime]:
    """`count` moments, oldest first, a day at a time: day `age` gets the share of calls whose age, 730 times a
    uniform draw to the power 1.5, falls in it (the draw's distribution: (age / days) ** (2 / 3))."""
    made = 0
    for age in range(days, 0, -1):
        due = round(count * (1 - ((age - 1) / days) ** (2 / 3)))  # calls at least `age - 1` days old, in all
        offsets = sorted((rng.random() for _ in range(due - made)), reverse=True)
        yield from (now - timedelta(days=age - 1 + offset) for offset in offsets)
        made = due


def _definitions(user: Any, partition: Any) -> list[Any]:
    from memory.ids import new_id
    from metrics.models import MetricDefinition
    from metrics.services import normalize_slug

    return MetricDefinition.objects.bulk_create(
        MetricDefinition(
            id=new_id("metric"), owner=user, partition=partition, slug=normalize_slug(slug), label=label, unit=unit
        )
        for slug, label, unit in METRICS
    )


def _readings(user: Any, definitions: list[Any], count: int) -> Iterator[Any]:
    from memory.ids import new_id
    from metrics.models import Observation

    rng = random.Random(SEED + 2)  # noqa: S311
    now = datetime.now(UTC)
    for _ in range(count):
        moment = now - timedelta(days=730 * rng.random())
        yield Observation(id=new_id("obs"), owner=user, definition=rng.choice(definitions),
                          value=round(rng.uniform(1, 100), 1), occurred_at=moment, created_at=moment)  # fmt: skip

"""The lists a person pages through are read in an index's order, and the dashboard's counts come from an index
alone: the plans PostgreSQL makes for the statements the selectors send (plans, not timings). What a plan may use
is narrowed for the test's transaction (`plan_of`'s `off`): with sequential scans, sorts and bitmap scans priced
out, a plan without a sort shows an index can give the order, which is what a large memory needs (bench/ui_pages.py:
a scan of every row and a sort cost 130 ms a page at 100,000 claims), whatever the planner would pick for a test's
few rows."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory import selectors
from memory.access import Access, Actor, access_for_user
from memory.activity import activity_for_access
from memory.dashboard import dashboard_counts, source_claims
from memory.models import Claim, Evidence, MemoryEvent, Source, User
from memory.recall.atlas import atlas_sections
from memory.recall.changes import recent_changes
from memory.services.audit import audit_record
from memory.services.coordination import coordination_health, memory_stats
from metrics.models import MetricDefinition
from metrics.selectors import definitions_with_stats, summaries
from metrics.services import observation_record
from tests.factories import ClaimFactory, NodeFactory

pytestmark = pytest.mark.django_db


ORDERED = ("seqscan", "sort", "bitmapscan")  # what is left: index scans; a sort only where no index gives the order


def statement_of(run: Callable[[], object], *fragments: str) -> str:
    """The SQL of the statement `run` sends that holds every fragment."""
    with CaptureQueriesContext(connection) as captured:
        run()
    return next(q["sql"] for q in captured.captured_queries if all(part in q["sql"] for part in fragments))


def plan_of(run: Callable[[], object], *fragments: str, off: tuple[str, ...] = ORDERED) -> str:
    """The plan of the statement `run` sends whose SQL holds every fragment, with the plan types `off` priced out."""
    sql = statement_of(run, *fragments)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_claim, memory_memoryevent, metrics_observation")  # this test's rows alone
        for name in off:
            cursor.execute(f"SET LOCAL enable_{name} = off")
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.fixture
def claims(alice: User) -> None:
    ClaimFactory.create_batch(30, owner=alice)
    ClaimFactory.create_batch(5, owner=alice, status="retracted")


@pytest.mark.parametrize(
    ("filters", "workspace"),
    [({}, False), ({}, True), ({"statuses": ["active", "retracted"]}, False), ({"kinds": ["preference"]}, False)],
)
def test_a_page_of_claims_is_read_newest_first_from_an_index(
    alice: User, claims: None, filters: dict[str, Any], workspace: bool
) -> None:
    access = access_for_user(user=alice, workspace=workspace)
    plan = plan_of(lambda: selectors.claims_for_access(access, limit=10, **filters), 'FROM "memory_claim"', "ORDER BY")
    assert "claim_owner_recent" in plan
    assert "Sort Key" not in plan  # the order is the index's: nothing is sorted


def test_the_next_page_continues_from_the_index_too(alice: User, claims: None) -> None:
    access = access_for_user(user=alice)
    first = selectors.claims_for_access(access, limit=10)
    plan = plan_of(
        lambda: selectors.claims_for_access(access, limit=10, cursor=first.next_cursor),
        'FROM "memory_claim"',
        "ORDER BY",
    )
    assert "claim_owner_recent" in plan
    assert "Sort Key" not in plan


def test_a_text_filter_sorts_its_matches_instead_of_walking_the_recency_index(alice: User, claims: None) -> None:
    """Walking the recency index for a word's matches would read every newer claim without it; its matches come
    from another index (the text's, on a large memory) and are sorted."""
    access = access_for_user(user=alice)
    plan = plan_of(
        lambda: selectors.claims_for_access(access, limit=10, text="option"), 'FROM "memory_claim"', "ORDER BY"
    )
    assert "claim_owner_recent" not in plan
    assert "Sort Key" in plan


def test_the_claims_list_leaves_the_vectors_unread(alice: User, claims: None) -> None:
    ClaimFactory.create(
        owner=alice, subject=NodeFactory.create(owner=alice), object_node=NodeFactory.create(owner=alice)
    )
    claim = selectors.claims_for_access(access_for_user(user=alice), limit=10).claims[0]
    vectors = {"embedding", "search_vector"}
    assert vectors <= claim.get_deferred_fields()
    assert vectors <= claim.subject.get_deferred_fields()  # type: ignore[union-attr]
    assert vectors <= claim.object_node.get_deferred_fields()  # type: ignore[union-attr]


@pytest.mark.parametrize("since", [None, "2026-01-01T00:00:00Z"])
def test_recent_changes_are_read_oldest_first_from_an_index(alice: User, claims: None, since: str | None) -> None:
    access = access_for_user(user=alice)
    moment = parse_datetime(since) if since else None
    plan = plan_of(
        lambda: recent_changes(access, since=moment, cursor=None, limit=10), 'FROM "memory_claim"', "ORDER BY"
    )
    assert "claim_owner_changed" in plan
    assert "Sort Key" not in plan


def test_the_atlas_reads_its_pinned_claims_and_current_context_from_their_own_indexes(
    alice: User, claims: None
) -> None:
    marcel = NodeFactory.create(owner=alice, label="Marcel")
    ClaimFactory.create_batch(3, owner=alice, subject=marcel, pinned=True)
    ClaimFactory.create_batch(3, owner=alice, subject=marcel, kind="working_context")
    access = access_for_user(user=alice)
    sections = dict(atlas_sections(access))
    assert (len(sections["Pinned"]), len(sections["Current context"])) == (3, 3)
    assert {"embedding", "search_vector"} <= sections["Pinned"][0].subject.get_deferred_fields()  # type: ignore[union-attr]
    pinned = plan_of(lambda: atlas_sections(access), 'FROM "memory_claim"', '"memory_claim"."pinned") ORDER BY')
    current = plan_of(lambda: atlas_sections(access), 'FROM "memory_claim"', "'working_context'")
    assert "claim_pinned" in pinned
    assert "claim_working_context" in current
    assert "Sort Key" not in pinned + current


@pytest.mark.parametrize("counts", [dashboard_counts, memory_stats])
def test_claims_by_status_are_counted_from_an_index_alone(
    alice: User, claims: None, counts: Callable[[Access], object]
) -> None:
    """COUNT(*) by status reads no column claim_reach lacks (COUNT(id) reads the id from every row): on a large
    memory, whose pages are all-visible, PostgreSQL counts from that index alone (100,000 claims: 43 -> 7 ms). A
    test's fresh rows are never all-visible, so the plan here would not show it."""
    access = access_for_user(user=alice)
    sql = statement_of(lambda: counts(access), 'FROM "memory_claim"', "GROUP BY")
    assert (
        'SELECT "memory_claim"."status", COUNT(*)' in sql
        or 'SELECT "memory_claim"."status" AS "status", COUNT(*)' in sql
    )


def test_a_sources_claims_include_those_of_its_messages(alice: User, claims: None) -> None:
    """source_claims reads the evidence of the source and of its messages through a subquery of their ids (31 ms
    -> 1 ms at 100,000 claims, bench/ui_pages.py; a plan on a table this small does not show it)."""
    access = access_for_user(user=alice)
    placed = {"owner": alice, "partition": access.partition, "occurred_at": timezone.now()}
    conversation = Source.objects.create(**placed, kind="conversation", external_id="chat")
    message = Source.objects.create(**placed, kind="message", external_id="chat-1", parent=conversation)
    other = Source.objects.create(**placed, kind="conversation", external_id="other")
    said, told, elsewhere = ClaimFactory.create_batch(3, owner=alice)
    Evidence.objects.create(owner=alice, claim=said, source=message, excerpt="option")
    Evidence.objects.create(owner=alice, claim=told, source=conversation, excerpt="option")
    Evidence.objects.create(owner=alice, claim=elsewhere, source=other, excerpt="option")
    assert set(source_claims(access, conversation)) == {said, told}
    assert source_claims(access, message) == [said]


def test_one_action_of_the_audit_trail_is_read_newest_first_from_its_index(alice: User, claims: None) -> None:
    for claim in Claim.objects.filter(owner=alice)[:10]:
        for action in ("claim.extract", "claim.pin", "claim.confirm"):
            audit_record(actor=Actor.person(alice, "ui"), owner=alice, action=action, target=claim)
    access = access_for_user(user=alice)
    plan = plan_of(lambda: activity_for_access(access, action="claim.pin"), 'FROM "memory_memoryevent"', "ORDER BY")
    assert "memoryevent_owner_action" in plan  # not the owner's whole trail, walked for the rare action's rows
    assert "Sort Key" not in plan or "Presorted Key" in plan  # at most the ties of one moment sorted by id


@pytest.fixture
def readings(alice: User) -> list[MetricDefinition]:
    access = access_for_user(user=alice)
    now = timezone.now()
    for slug in ("weight", "steps"):
        for day in range(40):
            observation_record(access, slug=slug, value=70.0 + day, occurred_at=now - timedelta(days=day * 5))
    return list(MetricDefinition.objects.filter(owner=alice))


def test_a_metrics_latest_reading_and_windows_are_read_from_the_end_of_its_series(
    alice: User, readings: list[MetricDefinition]
) -> None:
    latest = plan_of(lambda: summaries(readings), 'ORDER BY U0."occurred_at" DESC')
    assert "Index Scan Backward using observation_series" in latest  # per metric, its newest reading first
    windows = plan_of(lambda: summaries(readings), "FILTER (WHERE")
    assert "occurred_at >=" in windows  # the rows of the last 90 days alone, not every reading with a FILTER
    found = summaries(readings)
    assert {found[d.pk]["latest"]["value"] for d in readings} == {70.0}
    assert {found[d.pk]["windows"]["90d"]["count"] for d in readings} == {18}  # days 0, 5, ... 85


def test_a_metrics_count_and_ends_come_from_its_series_index(alice: User, readings: list[MetricDefinition]) -> None:
    access = access_for_user(user=alice)
    plan = plan_of(lambda: definitions_with_stats(access), "COUNT(*)")
    assert "Index Only Scan Backward using observation_series" in plan  # the last reading: the index's end
    assert "Hash Join" not in plan and "Merge Join" not in plan  # per metric, not every reading joined to it
    stats = {d.slug: d for d in definitions_with_stats(access)}
    assert [(d.count, d.latest_value) for d in stats.values()] == [(40, 70.0), (40, 70.0)]  # type: ignore[attr-defined]
    assert stats["weight"].last_at - stats["weight"].first_at == timedelta(days=195)  # type: ignore[attr-defined]
    assert definitions_with_stats(access, needs_review=True) == []


def test_coordination_health_dates_each_partition_from_the_end_of_the_trail(
    alice: User, bob: User, claims: None
) -> None:
    for claim in Claim.objects.filter(owner=alice)[:10]:
        audit_record(actor=Actor.system(), owner=alice, action="claim.extract", target=claim, partition=claim.partition)
    theirs = ClaimFactory.create(owner=bob)  # a later change of another person's: never alice's last write
    audit_record(actor=Actor.system(), owner=bob, action="claim.extract", target=theirs, partition=theirs.partition)
    access = access_for_user(user=alice, workspace=True)
    plan = plan_of(lambda: coordination_health(access), "ORDER BY 1 DESC LIMIT 1")
    assert "memoryevent_partition_recent" in plan and "Aggregate" not in plan  # its newest change, not every one
    newest = MemoryEvent.objects.filter(owner=alice).latest("created_at").created_at
    MemoryEvent.objects.filter(owner=bob).update(created_at=newest + timedelta(hours=1))  # later than any of hers
    (personal,) = coordination_health(access)["namespaces"]
    assert personal["staleness"]["lastWriteAt"] == newest


def test_stats_count_readings_by_their_metrics_ids(alice: User, readings: list[MetricDefinition]) -> None:
    access = access_for_user(user=alice)
    plan = plan_of(lambda: memory_stats(access), 'COUNT(*) AS "__count" FROM "metrics_observation"')
    assert "Index Only Scan" in plan  # no reading's row read to count it
    assert memory_stats(access)["metrics"] == {"definitions": 2, "observations": 80}

"""One day of memory (seeds/000 `/query/day`): what was said and stored that day in the user's time zone,
and the open tasks due that day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time
from zoneinfo import ZoneInfo

from commitments.selectors import OpenTask, open_commitments
from memory.access import Access
from memory.models import Scope, Source, SourceKind, SourceScope
from memory.moments import days_after
from memory.recall.atlas import current_claims
from memory.recall.fusion import Candidate
from memory.recall.results import SearchResult, claim_results

DAY_LIMIT = 100
SOURCE_KINDS = (SourceKind.MESSAGE, SourceKind.DOCUMENT, SourceKind.FILE, SourceKind.TRANSCRIPT, SourceKind.NOTE)


@dataclass(frozen=True)
class DayView:
    day: date
    zone: str
    claims: list[SearchResult]
    sources: list[SearchResult]
    due: list[OpenTask]


def day_bounds(day: date, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """Start and end of a calendar day in a time zone (23 or 25 hours long across a DST change)."""
    start = datetime.combine(day, time.min, zone)
    return start, datetime.combine(days_after(day, 1), time.min, zone)


def _source_result(source: Source) -> SearchResult:
    speaker = f"{source.speaker}: " if source.speaker and source.speaker not in ("user", "assistant") else ""
    excerpt = " ".join(source.text.split())[:300]
    return SearchResult(
        candidate=Candidate("source", source.pk),
        text=f"{source.title}: {excerpt}" if source.title and source.kind != SourceKind.MESSAGE else speaker + excerpt,
        time=source.authored_at or source.occurred_at,
        partition=source.partition.key,
        kind=source.kind,
        evidence=[{"sourceId": source.pk, "excerpt": excerpt, "messageId": source.message_id,
                   "authoredAt": source.authored_at}],
    )  # fmt: skip


def day_view(access: Access, day: date, zone_name: str) -> DayView:
    access.require_scope(Scope.READ)
    start, end = day_bounds(day, ZoneInfo(zone_name))
    claim_ids = list(
        current_claims(access)
        .filter(stated_at__gte=start, stated_at__lt=end)
        .order_by("stated_at", "id")
        .values_list("id", flat=True)[:DAY_LIMIT]
    )
    found = claim_results(claim_ids)
    sources = (
        Source.objects.live()
        .filter(owner=access.user, partition__in=access.read_partitions, scope=SourceScope.PERSONAL)
        .filter(kind__in=SOURCE_KINDS, occurred_at__gte=start, occurred_at__lt=end)
        .select_related("partition")
        .defer("markdown", "segments", "source_context", "participants")
        .order_by("occurred_at", "id")[:DAY_LIMIT]
    )
    due = [item for item in open_commitments(access) if item.due_on == day]
    return DayView(
        day=day,
        zone=zone_name,
        claims=[found[claim_id] for claim_id in claim_ids if claim_id in found],
        sources=[_source_result(source) for source in sources],
        due=due,
    )

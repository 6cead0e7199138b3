"""The audit trail in words (`/ui/activity/`, the claim page's history): what each action means, who did it,
through which surface, and the page its target lives on. One place for every action's words."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Q
from django.utils import timezone

from memory.access import Access
from memory.models import ActorKind, ChangeSurface, Claim, MemoryEvent, Node, Scope, Source
from memory.paging import decode_time_cursor, keyset_page

WORDS = {
    "claim.extract": "Learned from a source",
    "claim.correct": "Corrected: a new revision replaced this one",
    "claim.pin": "Pinned",
    "claim.unpin": "Unpinned",
    "claim.expire": "Expired",
    "claim.retract": "Retracted",
    "claim.confirm": "Confirmed",
    "claim.flag_reverification": "Flagged to be checked again",
    "claim.verdict": "Checked against its evidence",
    "claim.erase": "Claim erased",
    "claim.reap": "Claim removed: nothing supports it any more",
    "review.accept": "Accepted in review: it replaced the claim it conflicted with",
    "review.keep_old": "Dismissed in review: the claim it conflicted with was kept",
    "review.keep_both": "Kept in review, next to the claim it conflicted with",
    "review.undo": "A review decision was taken back: waiting for review again",
    "source.ingest": "Source stored",
    "source.retitle": "Source renamed",
    "source.erase": "Source erased",
    "operation.retry": "Processing tried again",
    "node.create": "Entity added",
    "node.update": "Entity changed",
    "node.merge": "Entities merged into this one",
    "node.delete": "Entity deleted",
    "node.prune": "Entity pruned: nothing referred to it any more",
    "alias.add": "Alias added",
    "alias.remove": "Alias removed",
    "task.create": "Task added",
    "task.status": "Task status changed",
    "task.reschedule": "Task rescheduled",
    "task.dismiss": "Suggested task dismissed",
    "memory.save": "Memory saved",
    "memory.delete": "Memory deleted",
    "memory.export": "Memory exported",
    "memory.import": "Memory imported from an archive",
    "history.import": "Chat history imported",
    "scratchpad.write": "Scratchpad written",
    "scratchpad.edit": "Scratchpad edited",
    "session.create": "Agent session started",
    "session.curate": "Agent session read into memory",
    "session.erase": "Agent session erased",
    "artifact.put": "File stored",
    "artifact.erase": "File erased",
    "metric.create": "Metric added",
    "metric.keep": "Metric kept as its own",
    "metric.merge": "Metric merged into another",
    "metric.erase": "Metric erased",
    "metric.observe": "Reading recorded",
    "metric.observe_bulk": "Readings recorded",
    "metric.observations_erase": "Readings erased",
    "partition.create": "Partition created",
    "partition.deactivate": "Partition deactivated",
    "partition.reactivate": "Partition reactivated",
    "partition.erase": "Partition erased",
    "token.issue": "Access token issued",
    "token.revoke": "Access token revoked",
}

TARGETS = {
    "claim": "Claim",
    "source": "Source",
    "node": "Entity",
    "memory": "Memory",
    "scratchpad": "Scratchpad",
    "agentsession": "Agent session",
    "blob": "File",
    "metricdefinition": "Metric",
    "observation": "Reading",
    "operation": "Processing",
    "partition": "Partition",
    "accesstoken": "Access token",
    "import": "Import",
}

WHO = {"you": "You", "token": "A token", "pipeline": "The pipeline", "admin": "An admin"}


def words_for(action: str) -> str:
    return WORDS.get(action, action)


def event_by(event: MemoryEvent) -> str:
    """Who did it, as the owner reads it (the token needs `actor_token` selected)."""
    if event.actor_kind == ActorKind.USER:
        return "you" if event.actor_user_id == event.owner_id else "an admin"
    if event.actor_kind == ActorKind.TOKEN:
        return f"token \u201c{event.actor_token.label}\u201d" if event.actor_token else "a token since deleted"
    return "the pipeline"


@dataclass(frozen=True)
class ActivityRow:
    event: MemoryEvent
    words: str
    by: str
    surface: str
    target: str  # the kind of object, in words
    link: str | None  # its page, while it exists and is in view
    name: str  # what it is called there ("" when it has no page)


@dataclass(frozen=True)
class ActivityPage:
    rows: list[ActivityRow]
    next_cursor: str | None


def activity_for_access(
    access: Access,
    *,
    action: str | None = None,
    target_type: str | None = None,
    who: str | None = None,
    surface: str | None = None,
    since: date | None = None,
    until: date | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> ActivityPage:
    """The owner's audit rows in the partitions in view (and the person-wide ones, which have no partition),
    newest first; `since` / `until` are whole days in the current time zone, both included."""
    access.require_scope(Scope.READ)
    events = MemoryEvent.objects.select_related("actor_token", "partition").filter(
        Q(partition__in=access.read_partitions) | Q(partition__isnull=True), owner=access.user
    )
    if action:
        events = events.filter(action=action)
    if target_type:
        events = events.filter(target_type=target_type)
    if who in WHO:
        events = events.filter(_who(access, who))
    if surface is not None:
        events = events.filter(surface=surface)
    if since:
        events = events.filter(created_at__gte=_day_start(since))
    if until:
        events = events.filter(created_at__lt=_day_start(until + timedelta(days=1)))
    if cursor:
        moment, last_id = decode_time_cursor(cursor)
        events = events.filter(Q(created_at__lt=moment) | Q(created_at=moment, id__lt=last_id))
    page, next_cursor = keyset_page(
        events.order_by("-created_at", "-id"), limit, lambda row: (row.created_at.isoformat(), row.pk)
    )
    links = _links(access, page)
    rows = [
        ActivityRow(
            event=event,
            words=words_for(event.action),
            by=event_by(event),
            surface=ChangeSurface(event.surface).label if event.surface in ChangeSurface.values else event.surface,
            target=TARGETS.get(event.target_type, event.target_type),
            link=links.get((event.target_type, event.target_id), (None, ""))[0],
            name=links.get((event.target_type, event.target_id), (None, ""))[1],
        )
        for event in page
    ]
    return ActivityPage(rows=rows, next_cursor=next_cursor)


def _who(access: Access, who: str) -> Q:
    if who == "you":
        return Q(actor_kind=ActorKind.USER, actor_user=access.user)
    if who == "admin":
        return Q(actor_kind=ActorKind.USER) & ~Q(actor_user=access.user)
    return Q(actor_kind=ActorKind.TOKEN if who == "token" else ActorKind.SYSTEM)


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def _links(access: Access, events: list[MemoryEvent]) -> dict[tuple[str, str], tuple[str, str]]:
    """The page and name of each target that still exists and is in view: one query per kind of target."""
    wanted: dict[str, set[str]] = {}
    for event in events:
        wanted.setdefault(event.target_type, set()).add(event.target_id)
    in_view = {"owner": access.user, "partition__in": access.read_partitions}
    links: dict[tuple[str, str], tuple[str, str]] = {}
    if ids := wanted.get("claim"):
        for pk, name in Claim.objects.filter(pk__in=ids, **in_view).values_list("pk", "statement"):
            links[("claim", pk)] = (f"/ui/claims/{pk}/", name)
    if ids := wanted.get("source"):
        live = Source.objects.filter(pk__in=ids, identity_retired_at__isnull=True, **in_view)
        for pk, title, external_id in live.values_list("pk", "title", "external_id"):
            links[("source", pk)] = (f"/ui/sources/{pk}/", title or external_id)
    if ids := wanted.get("node"):
        for pk, name in Node.objects.filter(pk__in=ids, **in_view).values_list("pk", "label"):
            links[("node", pk)] = (f"/ui/entities/{pk}/", name)
    if ids := wanted.get("metricdefinition"):
        from metrics.models import MetricDefinition  # metrics builds on memory, not the other way round

        for pk, slug, name in MetricDefinition.objects.filter(pk__in=ids, **in_view).values_list("pk", "slug", "label"):
            links[("metricdefinition", pk)] = (f"/ui/metrics/{slug}/", name)
    return links

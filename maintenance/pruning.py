"""Stale-node pruning (seeds/000): score every node of the partitions in reach, preview the candidates a page at
a time, and delete exactly the previewed ones that still qualify (docs/architecture.md "Maintenance and data
rights"). The score is maintenance/scoring.py; the deletion is memory.services.nodes.node_erase.

The facts are gathered in a fixed number of queries (nodes, claims touching them, open tasks and their links, newest
evidence), whatever the number of nodes or claims: PostgreSQL tallies each node's claims (grouped by node, once per
end of a claim), so what reaches Python is a row or two per node, never a row per claim (100,000 claims: 338 ->
261 ms, and no list of every claim in the web process). Scoring and the never-prune rules run in Python on the
tallies. A preview tallies only the nodes not seen within the days a candidate must be idle, and reads the newest
evidence only for the nodes it could still make qualify (`qualifying`): most nodes of a memory in use are seen or
read within those days.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.postgres.aggregates import ArrayAgg, BoolOr
from django.db import transaction
from django.db.models import Count, F, Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from commitments.selectors import OPEN_STATUSES
from maintenance.scoring import NodeFacts, Terms, fewest_idle_days, idle_days, reason_words, terms_of
from memory.access import Access
from memory.errors import ValidationFailed
from memory.models import Claim, ClaimOrigin, ClaimStatus, Evidence, Node, NodeType, Scope, vector_fields
from memory.models.sources import SourceScope
from memory.paging import decode_cursor, encode_cursor
from memory.services.nodes import node_erase

TRUSTED = (ClaimOrigin.USER_STATED, ClaimOrigin.MANUAL)
PAST = (ClaimStatus.SUPERSEDED, ClaimStatus.EXPIRED, ClaimStatus.RETRACTED)
MAX_PAGE = 500
MAX_IDLE_DAYS = 36500  # a hundred years: what a preview takes as the days a candidate must be idle, at most


@dataclass(frozen=True)
class Thresholds:
    min_score: float
    min_idle_days: int = 30
    include_reference: bool = False


@dataclass(frozen=True)
class Assessment:
    """One node as the pruner sees it: its score and terms, and why it may never be pruned (if it may not)."""

    node: Node
    facts: NodeFacts
    terms: Terms
    protected: str  # "" when nothing protects it

    @property
    def score(self) -> float:
        return round(self.terms.score, 4)

    def qualifies(self, thresholds: Thresholds) -> bool:
        return not self.protected and self.score >= thresholds.min_score

    def why_not(self, thresholds: Thresholds) -> str:
        if self.protected:
            return self.protected
        return f"score {self.score} is below {thresholds.min_score}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodeId": self.node.pk,
            "type": self.node.type,
            "label": self.node.label,
            "partitionKey": self.node.partition.key,
            "score": self.score,
            "terms": self.terms.as_dict(),
            "idleDays": int(self.facts.idle_days),
            "reason": reason_words(self.facts),
        }


@dataclass
class _Tally:
    newest: datetime | None = None
    current: int = 0
    trusted: int = 0
    past: int = 0
    pinned: bool = False
    linked: frozenset[str] = frozenset()

    def seen(self, moment: datetime | None) -> None:
        if moment is not None and (self.newest is None or moment > self.newest):
            self.newest = moment


def _tallies(access: Access, nodes: Q, now: datetime) -> dict[str, _Tally]:
    """Each node's tally of the claims touching it, counted by PostgreSQL: once as their subject, once as their
    object (a claim about a node and pointing at it counts once). Linked nodes are the other ends of its current
    claims."""
    current = Q(status=ClaimStatus.ACTIVE) & (Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    past = Q(status__in=PAST) | Q(status=ClaimStatus.ACTIVE, expires_at__lte=now)
    tallies: dict[str, _Tally] = defaultdict(_Tally)
    for end, other, touching in (
        ("subject", "object_node", Q()),
        ("object_node", "subject", Q(subject__isnull=True) | ~Q(subject=F("object_node"))),
    ):
        rows = (
            Claim.objects.filter(touching, owner=access.user, **{f"{end}__in": Node.objects.filter(nodes)})
            .order_by()
            .values_list(f"{end}_id")
            .annotate(
                newest=Max("last_accessed_at"),
                pinned=BoolOr("pinned"),
                current=Count("pk", filter=current),
                trusted=Count("pk", filter=current & Q(origin__in=TRUSTED)),
                past=Count("pk", filter=past),
                linked=ArrayAgg(
                    f"{other}_id",
                    distinct=True,
                    default=[],
                    filter=current & Q(**{f"{other}__isnull": False}) & ~Q(**{other: F(end)}),
                ),
            )
        )
        for node_id, newest, pinned, current_claims, trusted, past_claims, linked in rows:
            tally = tallies[node_id]
            tally.seen(newest)
            tally.pinned = tally.pinned or pinned
            tally.current += current_claims
            tally.trusted += trusted
            tally.past += past_claims
            tally.linked |= frozenset(linked)
    return tallies


def _with_open_task(access: Access, now: datetime) -> set[str]:
    """Open tasks, and the nodes a current claim links to one (its owner, the person it is sent to)."""
    open_tasks = set(
        Claim.objects.filter(
            owner=access.user, predicate="HAS_TASK_STATUS", status=ClaimStatus.ACTIVE, subject__type=NodeType.TASK,
            object_value__in=list(OPEN_STATUSES),
        ).values_list("subject_id", flat=True)
    )  # fmt: skip
    links = Claim.objects.filter(
        Q(subject__in=open_tasks) | Q(object_node__in=open_tasks),
        Q(expires_at__isnull=True) | Q(expires_at__gt=now),
        owner=access.user, status=ClaimStatus.ACTIVE, subject__isnull=False, object_node__isnull=False,
    ).values_list("subject_id", "object_node_id")  # fmt: skip
    return open_tasks | {end for ends in links for end in ends}


def _newest_evidence(access: Access, nodes: Q) -> dict[str, datetime]:
    """The newest evidence time (authored, else recorded) of any claim touching each node, in two queries."""
    newest: dict[str, datetime] = {}
    said = Coalesce("authored_at", "created_at")
    for end in ("claim__subject_id", "claim__object_node_id"):
        rows = (
            Evidence.objects.filter(owner=access.user, **{f"{end}__in": Node.objects.filter(nodes).values("pk")})
            .values(end)
            .annotate(newest=Max(said))
            .values_list(end, "newest")
        )
        for node_id, moment in rows:
            if moment is not None and (node_id not in newest or moment > newest[node_id]):
                newest[node_id] = moment
    return newest


def assess(access: Access, *, now: datetime, node_ids: Iterable[str] | None = None,
           thresholds: Thresholds) -> list[Assessment]:  # fmt: skip
    """Every node in the partitions this request reads (or just `node_ids` among them), assessed at `now`,
    in id order. Self nodes, merged-away pointers and (unless asked) reference nodes are left out of a full
    preview at once; named ids are assessed whatever they are, so an apply can say why it skips one. A preview
    takes `qualifying`, whose candidates are those of every node assessed here (tests/maintenance/test_pruning.py)."""
    scope = _scope(access, node_ids, thresholds)
    nodes, tallies, with_open_task = _gathered(access, scope, now)
    _seen_in_evidence(access, scope, tallies)
    return [_assessment(node, tallies[node.pk], node.pk in with_open_task, now, thresholds) for node in nodes]


def qualifying(access: Access, *, now: datetime, thresholds: Thresholds) -> list[Assessment]:
    """The nodes of a full preview that qualify, in id order: `assess`'s, with the newest evidence read only for
    the nodes it could still make qualify. Evidence is a sign of life: for a node with one already (seen, or a
    claim read), it can only make the node fresher, lowering its score and its idle days, so a node that does not
    qualify without it does not with it; a node without one is idle since it was made unless evidence is older.
    Likewise a node seen more lately than a candidate can be (its idle days, or too few for its score to reach the
    floor) is not tallied at all."""
    scope = _scope(access, None, thresholds)
    idle = max(thresholds.min_idle_days, fewest_idle_days(thresholds.min_score))
    if idle > 0:
        scope &= Q(last_seen_at__isnull=True) | Q(last_seen_at__lte=now - timedelta(days=idle))
    nodes, tallies, with_open_task = _gathered(access, scope, now)

    def assessed(node: Node) -> Assessment:
        return _assessment(node, tallies[node.pk], node.pk in with_open_task, now, thresholds)

    undecided = [node for node in nodes if tallies[node.pk].newest is None or assessed(node).qualifies(thresholds)]
    if not undecided:
        return []
    # The shorter list of ids names the nodes whose evidence is read: those undecided, or the others, left out.
    decided = {node.pk for node in nodes}.difference(node.pk for node in undecided)
    read = Q(pk__in=[node.pk for node in undecided]) if len(undecided) <= len(decided) else scope & ~Q(pk__in=decided)
    _seen_in_evidence(access, read, tallies)
    return [item for item in map(assessed, undecided) if item.qualifies(thresholds)]


def _scope(access: Access, node_ids: Iterable[str] | None, thresholds: Thresholds) -> Q:
    scope = Q(owner=access.user, partition__in=access.read_partitions)
    if node_ids is not None:
        return scope & Q(pk__in=list(node_ids))
    scope &= Q(is_self=False, merged_into__isnull=True)
    if not thresholds.include_reference:
        scope &= ~Q(scope=SourceScope.REFERENCE)
    return scope


def _gathered(access: Access, scope: Q, now: datetime) -> tuple[list[Node], dict[str, _Tally], set[str]]:
    """The nodes in `scope` (id order), each one's tally of claims with its own last sighting, and the nodes an
    open task protects."""
    nodes = list(Node.objects.filter(scope).select_related("partition").defer(*vector_fields()).order_by("pk"))
    tallies = _tallies(access, scope, now)
    for node in nodes:
        tallies[node.pk].seen(node.last_seen_at)
    return nodes, tallies, _with_open_task(access, now)


def _seen_in_evidence(access: Access, nodes: Q, tallies: dict[str, _Tally]) -> None:
    for node_id, moment in _newest_evidence(access, nodes).items():
        tallies[node_id].seen(moment)


def _assessment(node: Node, tally: _Tally, open_task: bool, now: datetime, thresholds: Thresholds) -> Assessment:
    facts = NodeFacts(
        idle_days=idle_days(tally.newest or node.created_at, now),
        linked_nodes=len(tally.linked),
        current_claims=tally.current,
        current_trusted=tally.trusted,
        past_claims=tally.past,
    )
    protected = _protection(node, facts, tally, open_task, thresholds)
    return Assessment(node=node, facts=facts, terms=terms_of(facts), protected=protected)


def _protection(node: Node, facts: NodeFacts, tally: _Tally, open_task: bool, thresholds: Thresholds) -> str:
    """Why a node is never pruned, or "" (docs/architecture.md: the never-prune rules)."""
    if node.is_self:
        return "the self node"
    if node.merged_into_id:
        return "merged into another node (kept as a pointer)"
    if node.scope == SourceScope.REFERENCE and not thresholds.include_reference:
        return "reference material (includeReference is false)"
    if tally.pinned:
        return "has a pinned claim"
    if open_task:
        return "an open task" if node.type == NodeType.TASK else "linked to an open task"
    if facts.idle_days < thresholds.min_idle_days:
        return f"seen within {thresholds.min_idle_days} days"
    return ""


@dataclass(frozen=True)
class StalePreview:
    as_of: datetime
    candidate_count: int
    nodes: list[Assessment]
    next_cursor: str | None


def _page_cursor(as_of: datetime, last: Assessment) -> str:
    return encode_cursor(as_of.isoformat(), last.score, last.node.pk)


def _decode(cursor: str) -> tuple[datetime, float, str]:
    moment_text, score, last_id = decode_cursor(cursor, 3)
    moment = parse_datetime(moment_text) if isinstance(moment_text, str) else None
    if moment is None or not isinstance(score, int | float) or not isinstance(last_id, str):
        raise ValidationFailed("The cursor is not valid.", details={"cursor": ["Invalid cursor."]})
    return moment, float(score), last_id


def prune_stale_preview(
    *, access: Access, thresholds: Thresholds, limit: int = 50, cursor: str | None = None
) -> StalePreview:
    """The nodes that would be pruned, highest score first (then id), a page at a time. The cursor carries the
    preview's clock, so every page scores against the same moment and each candidate appears exactly once."""
    access.require_scope(Scope.READ)
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationFailed("limit is out of range.", details={"limit": [f"From 1 to {MAX_PAGE}."]})
    if not 0 <= thresholds.min_idle_days <= MAX_IDLE_DAYS:  # past it, the moment a candidate is idle since overflows
        raise ValidationFailed("minIdleDays is out of range.", details={"minIdleDays": [f"From 0 to {MAX_IDLE_DAYS}."]})
    as_of, after = timezone.now(), None
    if cursor:
        as_of, last_score, last_id = _decode(cursor)
        after = (-last_score, last_id)
    candidates = sorted(
        qualifying(access, now=as_of, thresholds=thresholds), key=lambda item: (-item.score, item.node.pk)
    )
    rest = [item for item in candidates if after is None or (-item.score, item.node.pk) > after]
    page = rest[:limit]
    more = len(rest) > limit
    return StalePreview(
        as_of=as_of,
        candidate_count=len(candidates),
        nodes=page,
        next_cursor=_page_cursor(as_of, page[-1]) if more else None,
    )


@dataclass(frozen=True)
class Skipped:
    node_id: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"nodeId": self.node_id, "reason": self.reason}


@dataclass(frozen=True)
class Applied:
    deleted: list[str]
    skipped: list[Skipped]
    claims_erased: int


def prune_stale_apply(*, access: Access, node_ids: list[str], thresholds: Thresholds) -> Applied:
    """Delete the previewed nodes that still qualify under the same thresholds, each in its own transaction
    with its node row locked and reassessed there; the others are reported as skipped with why."""
    access.require_scope(Scope.MAINTENANCE)
    deleted: list[str] = []
    skipped: list[Skipped] = []
    erased = 0
    for node_id in dict.fromkeys(node_ids):  # once each, in the order given
        with transaction.atomic():
            locked = (
                Node.objects.select_for_update()
                .filter(pk=node_id, owner=access.user, partition__in=access.read_partitions)
                .values_list("pk", flat=True)
                .first()
            )
            found = assess(access, now=timezone.now(), node_ids=[node_id], thresholds=thresholds) if locked else []
            if not found:
                skipped.append(Skipped(node_id, "not found (deleted or out of reach)"))
                continue
            item = found[0]
            if not item.qualifies(thresholds):
                skipped.append(Skipped(node_id, item.why_not(thresholds)))
                continue
            if not item.node.partition.is_active or not access.can_reach(item.node.partition):
                skipped.append(Skipped(node_id, "its partition is inactive"))
                continue
            why = {"rule": "stale", "score": item.score, "minScore": thresholds.min_score}
            erased += node_erase(access=access, node=item.node, action="node.prune", why=why)
            deleted.append(node_id)
    return Applied(deleted=deleted, skipped=skipped, claims_erased=erased)

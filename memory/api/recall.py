"""Recall over REST (seeds/000): search, reference search, steward recall, atlas, day, recent changes, graph,
bootstrap and digest. `formattedResult` is the prompt contract (memory.recall.render), safe to paste."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from commitments.presenters import CommitmentOut, commitment_json, commitment_line
from commitments.selectors import OpenTask, due_buckets, open_commitments
from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.fields import plausible_time
from memory.api.openapi import (
    NodeRefOut,
    anything,
    flag,
    many,
    mapping,
    maybe_text,
    maybe_when,
    number,
    one,
    shape,
    text,
    texts,
    when,
)
from memory.api.presenters import node_ref
from memory.models import Claim, SourceScope
from memory.recall.atlas import atlas, atlas_sections
from memory.recall.changes import Change, recent_changes
from memory.recall.day import day_bounds, day_view
from memory.recall.graph import graph_view
from memory.recall.render import render_memory
from memory.recall.search import MAX_LIMIT, SearchRequest, search
from metrics.selectors import metric_movers


class TimeZoneField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        name = super().to_internal_value(data)
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise serializers.ValidationError(f"Unknown time zone {name!r}.") from exc
        return name


class RecallIn(RequestSerializer):
    assistantId = serializers.CharField(max_length=200, required=False, help_text="Which assistant asks.")


class SearchIn(RecallIn):
    query = serializers.CharField(max_length=4000, trim_whitespace=True)
    limit = serializers.IntegerField(default=8, min_value=1, max_value=MAX_LIMIT)
    excludeNodeTypes = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, default=list, max_length=50
    )
    since = serializers.DateTimeField(required=False, validators=[plausible_time])
    recentOnly = serializers.BooleanField(default=False, help_text="Only the last 7 days.")
    conversationId = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)
    includeFormattedResult = serializers.BooleanField(default=True)


SearchResultOut = shape(
    "SearchResultOut",
    type=serializers.ChoiceField(choices=["claim", "chunk", "node"]), id=text(), text=text(allow_blank=True),
    kind=text(allow_blank=True), score=number(), legs=mapping(help_text="Rank in each leg."), boosts=mapping(),
    status=text(), pinned=flag(), node=one(NodeRefOut, allow_null=True), evidence=anything(), time=maybe_when(),
    partition=text(),
)  # fmt: skip
ClaimBriefOut = shape(
    "ClaimBriefOut", claimId=text(), statement=text(), kind=text(), pinned=flag(),
    node=one(NodeRefOut, allow_null=True), origin=text(), statedAt=maybe_when(),
)  # fmt: skip
ChangeOut = shape(
    "ChangeOut", type=serializers.ChoiceField(choices=["claim", "node"]), id=text(), changedAt=when(),
    # The rest depends on the type: a claim's statement, kind, status, node, evidence; a node's label and type.
)  # fmt: skip
FORMATTED = {"help_text": "The same, rendered in the prompt contract (<assistant_memory>)."}


def claim_brief(claim: Claim) -> dict[str, Any]:
    return {
        "claimId": claim.pk,
        "statement": claim.statement,
        "kind": claim.kind,
        "pinned": claim.pinned,
        "node": node_ref(claim.subject),
        "origin": claim.origin,
        "statedAt": claim.stated_at,
    }


class QuerySearch(Endpoint):
    """Personal memory for this turn: hybrid keyword and vector search over claims, source chunks and node
    cards, with each result's ranking legs and evidence, and `formattedResult` to paste into a prompt.
    Reference material never appears here (see /query/reference)."""

    tool = "query.search"
    response_schema = shape(
        "SearchOut",
        query=text(),
        searchResults=many(SearchResultOut),
        formattedResult=text(required=False, **FORMATTED),
    )
    request_serializer = SearchIn
    example_request = {"query": "What did I say about morning meetings?"}
    scope = SourceScope.PERSONAL
    fast_lane = True

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        request = SearchRequest(
            query=data["query"],
            scope=self.scope,
            limit=data["limit"],
            exclude_node_types=tuple(data["excludeNodeTypes"]),
            since=data.get("since"),
            recent_only=data["recentOnly"],
            conversation_id=data["conversationId"],
        )
        results = search(access, request)
        answer: dict[str, Any] = {"query": data["query"], "searchResults": [r.as_json() for r in results]}
        if data["includeFormattedResult"]:
            answer["formattedResult"] = render_memory(evidence=results)
        return answer


class QueryReference(QuerySearch):
    """Saved reference material (documents ingested with scope `reference`), never personal claims."""

    tool = "query.reference"
    example_request = {"query": "release checklist"}
    scope = SourceScope.REFERENCE


class StewardRecallIn(RecallIn):
    query = serializers.CharField(max_length=4000, trim_whitespace=True)
    conversationId = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)


class StewardRecall(Endpoint):
    """What a steward injects before a model call (seeds/001): the best few memories for the message, at most
    MAX_INJECTED_MEMORIES (8), rendered in the prompt contract."""

    tool = "recall"
    response_schema = shape("RecallOut", memories=many(SearchResultOut), formattedResult=text(**FORMATTED))
    request_serializer = StewardRecallIn
    example_request = {"query": "Plan my week"}
    fast_lane = True

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        request = SearchRequest(
            query=data["query"], limit=settings.MAX_INJECTED_MEMORIES, conversation_id=data["conversationId"]
        )
        results = search(access, request)
        return {"memories": [r.as_json() for r in results], "formattedResult": render_memory(evidence=results)}


class QueryAtlas(Endpoint):
    """Stable personal context for a session's start (pinned claims, what the user said about themselves,
    current context), within ATLAS_MAX_CHARS. Put it in a system or developer block, not in the user message;
    `formattedResult` is the same text escaped inside the prompt contract."""

    tool = "query.atlas"
    response_schema = shape("AtlasOut", atlas=text(allow_blank=True), formattedResult=text(**FORMATTED))
    request_serializer = RecallIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        text = atlas(access)
        return {"atlas": text, "formattedResult": render_memory(atlas=text)}


class DayIn(RecallIn):
    date = serializers.DateField(validators=[plausible_time])
    timeZone = TimeZoneField(max_length=64, required=False, default=settings.TIME_ZONE)
    includeFormattedResult = serializers.BooleanField(default=False)


class QueryDay(Endpoint):
    """One day of memory in the user's time zone: claims stated, sources received and open tasks due."""

    tool = "query.day"
    response_schema = shape(
        "DayOut", date=serializers.DateField(), timeZone=text(), claims=many(SearchResultOut),
        sources=many(SearchResultOut), dueTasks=many(CommitmentOut), formattedResult=text(required=False, **FORMATTED),
    )  # fmt: skip
    request_serializer = DayIn
    example_request = {"date": "2026-04-26"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        view = day_view(access, data["date"], data["timeZone"])
        answer: dict[str, Any] = {
            "date": view.day.isoformat(),
            "timeZone": view.zone,
            "claims": [result.as_json() for result in view.claims],
            "sources": [result.as_json() for result in view.sources],
            "dueTasks": [commitment_json(item) for item in view.due],
        }
        if data["includeFormattedResult"]:
            answer["formattedResult"] = render_memory(
                commitments=[commitment_line(item) for item in view.due], evidence=[*view.claims, *view.sources]
            )
        return answer


class ChangesIn(RecallIn):
    since = serializers.DateTimeField(required=False, validators=[plausible_time])
    cursor = serializers.CharField(max_length=500, required=False)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


def change_json(change: Change) -> dict[str, Any]:
    return {"type": change.type, "id": change.id, "changedAt": change.changed_at, **change.data}


class QueryRecentChanges(Endpoint):
    """What is new: active claims and nodes added or changed since `since`, oldest first, with provenance;
    continue with `nextCursor`."""

    tool = "query.recent_changes"
    response_schema = shape("ChangesOut", changes=many(ChangeOut), nextCursor=maybe_text())
    request_serializer = ChangesIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        changes, next_cursor = recent_changes(
            access, since=data.get("since"), cursor=data.get("cursor"), limit=data["limit"]
        )
        return {"changes": [change_json(change) for change in changes], "nextCursor": next_cursor}


class GraphIn(RecallIn):
    maxNodes = serializers.IntegerField(default=100, min_value=1, max_value=500)
    nodeTypes = serializers.ListField(child=serializers.CharField(max_length=32), required=False, max_length=20)


class QueryGraph(Endpoint):
    """A bounded graph: at most `maxNodes` nodes in stable id order, and only their claims and source refs.
    Use /node/neighborhood to look further."""

    tool = "query.graph"
    response_schema = shape(
        "GraphOut",
        nodes=many(type("GraphNodeOut", (NodeRefOut,), {"__module__": __name__, "summary": text(allow_blank=True)})),
        claims=many(shape(
            "GraphClaimOut", claimId=text(), subjectId=maybe_text(), predicate=maybe_text(), objectId=maybe_text(),
            objectValue=anything(allow_null=True), statement=text(), kind=text(), sourceIds=texts(),
        )),
        truncated=flag(),
    )  # fmt: skip
    request_serializer = GraphIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        view = graph_view(access, max_nodes=data["maxNodes"], node_types=data.get("nodeTypes"))
        return {
            "nodes": [{**(node_ref(node) or {}), "summary": node.summary} for node in view.nodes],
            "claims": [
                {
                    "claimId": claim.pk, "subjectId": claim.subject_id, "predicate": claim.predicate or None,
                    "objectId": claim.object_node_id, "objectValue": claim.object_value,
                    "statement": claim.statement, "kind": claim.kind, "sourceIds": view.sources.get(claim.pk, []),
                }
                for claim in view.claims
            ],
            "truncated": view.truncated,
        }  # fmt: skip


def _bootstrap(access: Access) -> tuple[str, list[Claim], list[Claim], list[OpenTask]]:
    sections = dict(atlas_sections(access))
    preferences = [claim for claim in sections["About the user"] if claim.kind == "preference"]
    return atlas(access), sections["Pinned"], preferences, open_commitments(access)


class ContextBootstrap(Endpoint):
    """Everything a session starts with, in one call: atlas, pinned claims, preferences, open commitments,
    and all of it as `formattedResult`."""

    tool = "context.bootstrap"
    fast_lane = True
    response_schema = shape(
        "BootstrapOut", atlas=text(allow_blank=True), pinned=many(ClaimBriefOut), preferences=many(ClaimBriefOut),
        openCommitments=many(CommitmentOut), formattedResult=text(**FORMATTED),
    )  # fmt: skip
    request_serializer = RecallIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        text, pinned, preferences, tasks = _bootstrap(access)
        return {
            "atlas": text,
            "pinned": [claim_brief(claim) for claim in pinned],
            "preferences": [claim_brief(claim) for claim in preferences],
            "openCommitments": [commitment_json(item) for item in tasks],
            "formattedResult": render_memory(atlas=text, commitments=[commitment_line(item) for item in tasks]),
        }


class DigestIn(RecallIn):
    date = serializers.DateField(validators=[plausible_time])
    timeZone = TimeZoneField(max_length=64)
    since = serializers.DateTimeField(required=False, validators=[plausible_time])
    upcomingWithinDays = serializers.IntegerField(default=7, min_value=0, max_value=90)
    metricMoverLimit = serializers.IntegerField(default=10, min_value=0, max_value=100)
    whatsNewLimit = serializers.IntegerField(default=50, min_value=0, max_value=200)
    includePinned = serializers.BooleanField(default=True)


class Digest(Endpoint):
    """A "Today" view in one call (seeds/000): open commitments bucketed overdue / dueToday / upcoming, what
    is new since `since` (default: the start of `date` in `timeZone`), the metrics that moved most recently and
    pinned claims."""

    tool = "digest"
    response_schema = shape(
        "DigestOut", date=serializers.DateField(), timeZone=text(), generatedAt=when(), since=when(),
        commitments=serializers.DictField(child=serializers.ListField(child=CommitmentOut()),
                                          help_text="overdue, dueToday, upcoming (and undated)."),
        metricMovers=serializers.ListField(child=mapping()), whatsNew=many(ChangeOut), pinned=many(ClaimBriefOut),
    )  # fmt: skip
    request_serializer = DigestIn
    example_request = {"date": "2026-05-29", "timeZone": "Europe/Amsterdam"}

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        zone = ZoneInfo(data["timeZone"])
        since: datetime = data.get("since") or day_bounds(data["date"], zone)[0]
        changes, _ = recent_changes(access, since=since, cursor=None, limit=max(1, data["whatsNewLimit"]))
        pinned = dict(atlas_sections(access))["Pinned"] if data["includePinned"] else []
        tasks = open_commitments(access)
        return {
            "date": data["date"].isoformat(),
            "timeZone": data["timeZone"],
            "generatedAt": timezone.now(),
            "since": since,
            "commitments": {
                bucket: [commitment_json(item) for item in items]
                for bucket, items in due_buckets(tasks, data["date"], data["upcomingWithinDays"]).items()
            },
            "metricMovers": metric_movers(access, data["metricMoverLimit"]),
            "whatsNew": [change_json(change) for change in changes][: data["whatsNewLimit"]],
            "pinned": [claim_brief(claim) for claim in pinned],
        }

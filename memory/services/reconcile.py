"""Reconcile: the one place extracted candidates become stored knowledge, under the steward's policy
(seeds/001). Nothing is silently overwritten or deleted:

- below `min_importance` / `min_confidence`, over `max_writes_per_job`, or inferred without evidence and a
  reason: rejected (counted);
- the same statement about the same subject: the existing claim gains evidence, no new row;
- a single-valued predicate (works at, lives in, a task's status, due date, owner) stated anew by the user:
  the old claim is superseded (valid_until, superseded_by), history kept;
- a different claim at least `conflict_similarity_threshold` similar to an active one: stored as `suggested`
  for review;
- otherwise a new active claim. Tasks: a Task node with its status (and owner, due date) claims; completion
  and cancellation move the matching open task. Readings are kept as `reading` claims (metric, value, unit).

Everything is screened on the way in: forged delimiters are escaped, and instruction-shaped text from an
inferred or imported origin is stored as `quarantined` (seeds/004).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from pgvector.django import CosineDistance

from commitments.services import status_set, task_lock
from memory.access import Actor
from memory.extraction.base import (
    SELF,
    ClaimCandidate,
    EvidenceRef,
    Extraction,
    NodeRef,
    ReadingCandidate,
    TaskCandidate,
)
from memory.models import Claim, ClaimKind, ClaimOrigin, ClaimStatus, Evidence, Node, NodeType, Source
from memory.moments import moment_after
from memory.names import normalize_name
from memory.screening import quarantines, sanitize_text
from memory.services.audit import audit_record, memory_changed
from memory.services.embeddings import Vectors, texts_embed
from memory.services.graph import node_find_or_create, nodes_seen, seen_moment

logger = logging.getLogger("memory.reconcile")

_COUNTED_AS = {ClaimStatus.SUGGESTED: "suggested", ClaimStatus.QUARANTINED: "quarantined"}
SINGLE_VALUED = {"WORKS_AT", "LIVES_IN", "HAS_TASK_STATUS", "DUE_ON", "OWNED_BY"}


def supersedes(candidate: ClaimCandidate) -> bool:
    """One current value per subject: these predicates, and a preference on a topic ("PREFERS:meeting") that
    says it replaces the earlier ones (a choice or a change: "now I prefer afternoon meetings")."""
    if candidate.predicate in SINGLE_VALUED:
        return True
    value = candidate.object_value
    return candidate.predicate.startswith("PREFERS:") and isinstance(value, dict) and bool(value.get("replaces"))


OPEN_STATUSES = ("pending", "in_progress")
_STOPWORDS = {
    "the", "a", "an", "to", "for", "with", "of", "my", "i", "me", "it", "on", "in", "and", "is", "by", "at",
    "de", "het", "een", "van", "voor", "aan", "ik", "mijn", "this", "that", "just", "already",
}  # fmt: skip
_WORD = re.compile(r"[\w']+")


def _tokens(text: str) -> set[str]:
    return {word for word in _WORD.findall(normalize_name(text)) if word not in _STOPWORDS and len(word) > 1}


def _similar(first: set[str], second: set[str]) -> float:
    return len(first & second) / len(first | second) if first and second else 0.0


def _covered(task: set[str], sentence: set[str]) -> float:
    return len(task & sentence) / len(task) if task else 0.0


@dataclass
class Reconciler:
    source: Source
    extractor: str
    counts: Counter[str]
    vectors: dict[str, list[float]] = field(default_factory=dict)  # statement -> vector of the active model
    model_id: str = ""
    seen_at: Any = None  # when the people of this job were mentioned: its newest message time
    # The open tasks and their words, read once per job and read again only after this job changed which tasks
    # are open or who owns one (a new due date changes neither): a job mentioning twenty tasks read them all
    # twenty times (docs/benchmarks.md, issue 18).
    _open: list[tuple[Node, set[str]]] | None = field(default=None, init=False, repr=False)
    # The tasks this job locked (task_lock): the job's one transaction holds each lock to its end, so a task named
    # again is not locked again; and the active due dates of tasks it read under that lock, kept true by its own
    # changes, so a task rescheduled in several turns of a job is read once (docs/benchmarks.md, issue 18).
    _locked: set[str] = field(default_factory=set, init=False, repr=False)
    _dues: dict[str, list[Claim]] = field(default_factory=dict, init=False, repr=False)
    # The nodes this job named, by type and normalised name, and when each was last mentioned: a chat names its
    # speakers in nearly every turn, and each mention looked the node up and touched it (issue 18). The touches
    # are written once, at the end of the job (last_seen_at only moves forward, so the latest mention decides).
    _nodes: dict[tuple[str, str], Node] = field(default_factory=dict, init=False, repr=False)
    _seen: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @property
    def owner(self) -> Any:
        return self.source.owner

    @property
    def partition(self) -> Any:
        return self.source.partition

    def run(self, extraction: Extraction) -> dict[str, int]:
        said = [item.evidence.authored_at for item in extraction.claims]
        said += [item.evidence.authored_at for item in extraction.tasks]
        said += [item.evidence.authored_at for item in extraction.readings]
        self.seen_at = max((moment for moment in said if moment is not None), default=None) or self._said_at()
        for person in extraction.people:
            self._node(person)
        for candidate in extraction.claims:
            self.claim(candidate)
        for task in extraction.tasks:
            self.task(task)
        for reading in extraction.readings:
            self.reading(reading)
        nodes_seen(self._seen)
        return dict(self.counts)

    def _said_at(self) -> Any:
        """When the source's text was said: its newest message, else its own time."""
        newest = self.source.children.aggregate(newest=Max("authored_at"))["newest"]
        return newest or self.source.authored_at or self.source.occurred_at

    def _node(self, ref: NodeRef, seen_at: Any = None) -> Node:
        ref = replace(ref, label=sanitize_text(ref.label))
        key = ("", "self") if ref.is_self else (ref.type, normalize_name(ref.label))
        node = self._nodes.get(key)
        if node is None:
            node = self._nodes[key] = node_find_or_create(self.owner, self.partition, ref)
        if not ref.is_self:
            moment = seen_moment(seen_at or self.seen_at)
            self._seen[node.pk] = max(moment, self._seen.get(node.pk, moment))
        return node

    # Claims ---------------------------------------------------------------------------------------

    def _admissible(self, candidate: ClaimCandidate) -> bool:
        policy_ok = (
            candidate.importance >= settings.STEWARD_MIN_IMPORTANCE
            and candidate.confidence * 100 >= settings.STEWARD_MIN_CONFIDENCE_PERCENT
        )
        inferred_ok = candidate.origin != ClaimOrigin.ASSISTANT_INFERRED or (
            candidate.reason and candidate.evidence.excerpt
        )
        writes_ok = self.counts["writes"] < settings.STEWARD_MAX_WRITES_PER_JOB
        return bool(policy_ok and inferred_ok and writes_ok)

    def claim(self, candidate: ClaimCandidate, *, compare: bool = True) -> Claim | None:
        """Store one candidate under the policy. `compare` False skips the near-duplicate check, for values
        that are alike by nature (two weights on two days are not a conflict)."""
        if not self._admissible(candidate):
            self.counts["rejected"] += 1
            return None
        candidate = replace(candidate, statement=sanitize_text(candidate.statement))
        said = candidate.evidence.authored_at
        subject = self._node(candidate.subject, said)
        target = self._node(candidate.object_node, said) if candidate.object_node else None
        current = Claim.objects.filter(
            owner=self.owner, partition=self.partition, subject=subject, predicate=candidate.predicate,
            status__in=[ClaimStatus.ACTIVE, ClaimStatus.SUGGESTED],
        )  # fmt: skip
        wanted = normalize_name(candidate.statement)
        duplicate = next((claim for claim in current if normalize_name(claim.statement) == wanted), None)
        if duplicate is not None:
            self._evidence(duplicate, candidate.evidence)
            self.counts["evidenceAdded"] += 1
            return duplicate
        superseded = []
        status = ClaimStatus.ACTIVE
        if supersedes(candidate) and candidate.origin == ClaimOrigin.USER_STATED:
            superseded = list(current.filter(status=ClaimStatus.ACTIVE))
        vector, model_id = self._embed(candidate.statement)
        if quarantines(candidate.origin, candidate.statement):
            status, superseded = ClaimStatus.QUARANTINED, []
        conflict = None
        if status != ClaimStatus.QUARANTINED and compare and not superseded and vector is not None:
            conflict = self._conflicts(subject, vector, model_id)
            status = ClaimStatus.SUGGESTED if conflict is not None else status
        claim = self._create(candidate, subject, target, status, vector, model_id)
        if conflict is not None:
            claim.conflicts_with = conflict
            claim.save(update_fields=["conflicts_with"])
        for old in superseded:
            old.status, old.superseded_by, old.valid_until = ClaimStatus.SUPERSEDED, claim, claim.valid_from
            old.save(update_fields=["status", "superseded_by", "valid_until", "updated_at"])
            self.counts["superseded"] += 1
        self.counts[_COUNTED_AS.get(status, "claimsCreated")] += 1
        return claim

    def reading(self, candidate: ReadingCandidate) -> Claim | None:
        """A `reading` claim about the owner (so recall finds it) and an observation of the metric, linked to
        its source, the claim and an Event node; the same reading stated again only adds evidence."""
        when = _reading_time(candidate)
        value = {"metric": candidate.metric, "value": candidate.value, "unit": candidate.unit}
        value["occurredAt"] = when.isoformat()
        statement = _reading_statement(candidate)
        claim_candidate = ClaimCandidate(
            statement, ClaimKind.READING, SELF, candidate.evidence, "MEASURED", object_value=value, importance=2
        )
        claim = self.claim(claim_candidate, compare=False)
        if claim is not None and claim.status == ClaimStatus.ACTIVE:
            from metrics.models import Observation
            from metrics.services import reading_record

            if not Observation.objects.filter(claim=claim).exists():  # the same reading again is evidence only
                source = Source.objects.get(pk=candidate.evidence.source_id)
                reading_record(
                    source=source, claim=claim, metric=candidate.metric, value=candidate.value,
                    unit=candidate.unit, occurred_at=when, embed=self._embed,
                )  # fmt: skip
                self.counts["observations"] += 1
        return claim

    def _conflicts(self, subject: Node, vector: list[float], model_id: str) -> Claim | None:
        """The nearest active claim about the subject close enough to conflict, if any."""
        threshold = settings.STEWARD_CONFLICT_SIMILARITY_PERCENT / 100
        return (
            Claim.objects.filter(subject=subject, status=ClaimStatus.ACTIVE, embedding_model=model_id)
            .annotate(distance=CosineDistance("embedding", vector))
            .filter(distance__lte=1 - threshold)
            .order_by("distance", "pk")
            .first()
        )

    def _embed(self, text: str) -> tuple[list[float] | None, str]:
        """The vector embedded before the job took its locks (`reconcile_vectors`); never a call from here."""
        vector = self.vectors.get(text)
        return (vector, self.model_id) if vector is not None else (None, "")

    def _create(
        self,
        candidate: ClaimCandidate,
        subject: Node | None,
        target: Node | None,
        status: str,
        vector: list[float] | None,
        model_id: str,
    ) -> Claim:
        stated = candidate.evidence.authored_at or timezone.now()
        lifetime = settings.WORKING_CONTEXT_DAYS if candidate.kind == ClaimKind.WORKING_CONTEXT else None
        lifetime = lifetime or candidate.expires_in_days
        claim = Claim.objects.create(
            owner=self.owner,
            partition=self.partition,
            scope=self.source.scope,
            statement=candidate.statement,
            kind=candidate.kind,
            subject=subject,
            predicate=candidate.predicate,
            object_node=target,
            object_value=candidate.object_value,
            status=status,
            origin=candidate.origin,
            extractor=self.extractor,
            reason=candidate.reason,
            confidence=candidate.confidence,
            importance=candidate.importance,
            valid_from=stated,
            stated_at=stated,
            expires_at=moment_after(stated, timedelta(days=lifetime)) if lifetime else None,
            embedding=vector,
            embedding_model=model_id,
        )
        self._evidence(claim, candidate.evidence, new=True)
        self.counts["writes"] += 1
        audit_record(
            actor=Actor.system(), owner=self.owner, action="claim.extract", target=claim, partition=self.partition,
            after={"kind": claim.kind, "status": claim.status, "extractor": self.extractor},
        )  # fmt: skip
        return claim

    def _evidence(self, claim: Claim, ref: EvidenceRef, *, new: bool = False) -> None:
        """Evidence for the claim; fresh evidence for an inferred claim lifts `needs_reverification`. A `new`
        claim has no evidence yet, so nothing is looked up first."""
        key = {"claim": claim, "source_id": ref.source_id, "message_id": ref.message_id}
        fields = {
            "owner": self.owner, "excerpt": sanitize_text(ref.excerpt), "authored_at": ref.authored_at,
            "chunk_id": ref.chunk_id,
        }  # fmt: skip
        if new:
            Evidence.objects.create(**key, **fields)
            return
        _, created = Evidence.objects.get_or_create(**key, defaults=fields)
        if created and claim.needs_reverification:
            claim.needs_reverification = False
            claim.save(update_fields=["needs_reverification", "updated_at"])

    # Tasks ----------------------------------------------------------------------------------------

    def _open_tasks(self) -> list[tuple[Node, set[str]]]:
        """Open tasks with the words they answer to (label and owner), in three queries. Only the tasks become
        objects: their status and owner claims are read as values (36 open tasks: 7.0 -> 4.7 ms; docs/benchmarks.md,
        issue 18, twelfth pass)."""
        statuses = Claim.objects.filter(
            owner=self.owner, partition=self.partition, predicate="HAS_TASK_STATUS", status=ClaimStatus.ACTIVE,
            subject__type=NodeType.TASK,
        ).values_list("subject_id", "object_value")  # fmt: skip
        open_ids = [task_id for task_id, status in statuses if status in OPEN_STATUSES]
        tasks = {task.pk: task for task in Node.objects.filter(pk__in=open_ids).defer("embedding")}
        owners = Claim.objects.filter(
            subject_id__in=tasks, predicate="OWNED_BY", status=ClaimStatus.ACTIVE, object_node__isnull=False
        ).values_list("subject_id", "object_node__label")  # fmt: skip
        words = {task_id: _tokens(task.label) for task_id, task in tasks.items()}
        for task_id, label in owners:
            words[task_id] |= _tokens(label)
        return [(tasks[task_id], words[task_id]) for task_id in dict.fromkeys(open_ids) if task_id in tasks]

    def _open_task_words(self) -> list[tuple[Node, set[str]]]:
        if self._open is None:
            self._open = self._open_tasks()
        return self._open

    def _open_changed(self, task: Node, *, open_now: bool | None, owner: Node | None = None) -> None:
        """Keep the open tasks read for this job true after this job changed one, instead of reading them all
        again (a job creating ten tasks read them ten times: docs/benchmarks.md, issue 18). `open_now`: the task
        is open now (True), closed (False) or as it was (None); `owner`: its new owner, whose name it answers to."""
        if self._open is None:  # not read yet: the first read sees this job's own changes
            return
        words = next((words for candidate, words in self._open if candidate.pk == task.pk), None)
        rest = [(candidate, words) for candidate, words in self._open if candidate.pk != task.pk]
        if open_now is False or (words is None and not open_now):
            self._open = rest
            return
        if owner is not None or words is None:
            words = _tokens(task.label) | (_tokens(owner.label) if owner is not None else set())
        self._open = [*rest, (task, words)]

    def _match(self, candidate: TaskCandidate, minimum: float) -> Node | None:
        """The open task this candidate talks about. A removal sentence is long ("About the spec for Marcel:
        there is no deadline now"), so for it what counts is how much of the task it names."""
        wanted = _tokens(candidate.label)
        changes = candidate.rescheduled or candidate.status in ("completed", "abandoned")
        scored = [
            (
                # A change names the task by its thing ("the demo moved to ..."): how much of that the task has.
                _covered(words, wanted) if candidate.due_removed else _covered(wanted, words) if changes
                else _similar(wanted, words),
                task.pk, task,
            )
            for task, words in self._open_task_words()
        ]  # fmt: skip
        best = max(scored, default=None, key=lambda item: (item[0], item[1]))
        return best[2] if best and best[0] >= minimum else None

    def task(self, candidate: TaskCandidate) -> None:
        candidate = replace(candidate, label=sanitize_text(candidate.label))
        if candidate.status in ("completed", "abandoned"):
            match = self._match(candidate, 0.5)
            if match is None:
                self.counts["tasksUnmatched"] += 1
                return
            self._set_status(match, candidate)
            self.counts["tasksUpdated"] += 1
            return
        match = self._match(candidate, 0.5 if candidate.rescheduled else 0.6)
        if match is None and (candidate.due_removed or candidate.rescheduled):
            self.counts["tasksUnmatched"] += 1
            return
        if match is not None:
            self._set_due(match, candidate)
            self.counts["tasksUpdated"] += 1
            return
        self._create_task(candidate)

    def _task_claim(
        self, task: Node, predicate: str, value_text: str, candidate: TaskCandidate, *, object_value: Any = None,
        object_node: Node | None = None, current: list[Claim] | None = None,
    ) -> Claim:  # fmt: skip
        """A new current owner or due date of a task; the previous one is superseded (statuses go through
        commitments.services.status_set). `current`: the active claims of the predicate, read by a caller that
        already holds the task's lock."""
        claim_candidate = ClaimCandidate(
            statement=f"{task.label}: {value_text}",
            kind=ClaimKind.FACT,
            subject=NodeRef(type=NodeType.TASK, label=task.label), evidence=candidate.evidence, predicate=predicate,
            object_value=object_value, origin=candidate.origin,
        )  # fmt: skip
        if predicate == "OWNED_BY" and object_node is not None:  # the owner's name is a word the task answers to
            self._open_changed(task, open_now=None, owner=object_node)
        if current is None:
            self._lock(task)
            current = list(Claim.objects.filter(subject=task, predicate=predicate, status=ClaimStatus.ACTIVE))
        claim = self._create(claim_candidate, task, object_node, ClaimStatus.ACTIVE, None, "")
        for old in current:
            old.status, old.superseded_by, old.valid_until = ClaimStatus.SUPERSEDED, claim, claim.valid_from
            old.save(update_fields=["status", "superseded_by", "valid_until", "updated_at"])
        if predicate == "DUE_ON":
            self._dues[task.pk] = [claim]
        return claim

    def _lock(self, task: Node) -> None:
        """task_lock, once per task and job (this job's transaction holds it to the end)."""
        if task.pk not in self._locked:
            task_lock(task)
            self._locked.add(task.pk)

    def _create_task(self, candidate: TaskCandidate) -> None:
        """A Task node with its pending status, owner and due date. An instruction-shaped task from an inferred
        origin is kept with a quarantined status only, so it is never an open commitment."""
        task = Node.objects.create(
            owner=self.owner, partition=self.partition, type=NodeType.TASK, label=candidate.label
        )
        if quarantines(candidate.origin, candidate.label):
            self._set_status(task, replace(candidate, status="pending"), quarantined=True)
            self.counts["quarantined"] += 1
            return
        self._set_status(task, replace(candidate, status="pending"))
        if candidate.owner is not None:
            person = self._node(candidate.owner, candidate.evidence.authored_at)
            self._task_claim(task, "OWNED_BY", f"owned by {person.label}", candidate, object_node=person)
        if candidate.due_on is not None:
            self._task_claim(task, "DUE_ON", f"due {candidate.due_on.isoformat()}", candidate,
                             object_value=candidate.due_on.isoformat())  # fmt: skip
        for ref in candidate.people:
            self._mention(task, self._node(ref, candidate.evidence.authored_at), candidate)
        self.counts["tasksCreated"] += 1

    def _mention(self, task: Node, person: Node, candidate: TaskCandidate) -> None:
        """A person the commitment names besides its owner (the recipient, the one asked): an edge from the
        task, so the person's neighbourhood shows what is owed to or asked of them. Many may hold at once."""
        claim_candidate = ClaimCandidate(
            statement=f"{task.label}: mentions {person.label}", kind=ClaimKind.FACT,
            subject=NodeRef(type=NodeType.TASK, label=task.label), evidence=candidate.evidence, predicate="MENTIONS",
            origin=candidate.origin,
        )  # fmt: skip
        self._create(claim_candidate, task, person, ClaimStatus.ACTIVE, None, "")

    def _set_status(self, task: Node, candidate: TaskCandidate, *, quarantined: bool = False) -> None:
        # A quarantined status supersedes nothing and is never open: the open tasks stay as they are.
        self._open_changed(task, open_now=None if quarantined else candidate.status in OPEN_STATUSES)
        ref = candidate.evidence
        evidence = {
            "source_id": ref.source_id, "excerpt": sanitize_text(ref.excerpt), "message_id": ref.message_id,
            "authored_at": ref.authored_at,
        }  # fmt: skip
        status_set(
            task, candidate.status, actor=Actor.system(), origin=candidate.origin, extractor=self.extractor,
            evidence=evidence, quarantined=quarantined,
        )  # fmt: skip

    def _set_due(self, task: Node, candidate: TaskCandidate) -> None:
        """New explicit dates replace inferred ones; removal wording clears an inferred date; a date the user
        set by hand (origin manual) is never cleared; no date in the text keeps the current one."""
        if candidate.due_on is None and not candidate.due_removed:
            return  # nothing to change: no lock to take, no date to read
        self._lock(task)  # before reading the current date: another job may be changing it
        dues = self._dues.get(task.pk)
        if dues is None:
            active = Claim.objects.filter(subject=task, predicate="DUE_ON", status=ClaimStatus.ACTIVE)
            dues = self._dues[task.pk] = list(active.order_by("pk"))
        due = dues[0] if dues else None
        if candidate.due_removed:
            if due is not None and due.origin != ClaimOrigin.MANUAL:
                due.status, due.valid_until = ClaimStatus.RETRACTED, timezone.now()
                due.save(update_fields=["status", "valid_until", "updated_at"])
                self._dues[task.pk] = dues[1:]
            return
        if candidate.due_on is not None and (due is None or due.object_value != candidate.due_on.isoformat()):
            if due is not None and due.origin == ClaimOrigin.MANUAL:
                return
            self._task_claim(task, "DUE_ON", f"due {candidate.due_on.isoformat()}", candidate,
                             object_value=candidate.due_on.isoformat(), current=dues)  # fmt: skip


def _reading_time(candidate: ReadingCandidate) -> Any:
    return candidate.occurred_at or candidate.evidence.authored_at or timezone.now()


def _reading_statement(candidate: ReadingCandidate) -> str:
    day = timezone.localtime(_reading_time(candidate), ZoneInfo(settings.EXTRACTION_TIME_ZONE)).date().isoformat()
    name = candidate.metric.replace("_", " ").capitalize()
    return sanitize_text(f"{name}: {candidate.value:g} {candidate.unit} on {day}.")


def reconcile_vectors(extraction: Extraction) -> Vectors:
    """Every vector reconcile will want (claim statements, reading statements, the cards of metrics a reading
    may create), embedded in one batch. Call it before taking the source lock: a slow or down embedder then
    holds no lock, and costs one call per job, not one per claim. Unavailable: logged, and claims are stored
    without vectors (the sweep and `embeddings reindex` fill them later)."""
    from metrics.services import definition_card

    texts = [sanitize_text(candidate.statement) for candidate in extraction.claims]
    texts += [_reading_statement(reading) for reading in extraction.readings]
    texts += [definition_card(slug=reading.metric, unit=reading.unit) for reading in extraction.readings]
    return texts_embed(texts, event="reconcile.embedder_unavailable")


@transaction.atomic
def reconcile(
    *, source: Source, extraction: Extraction, extractor: str, vectors: Vectors | None = None
) -> dict[str, int]:
    """Store what the policy admits from one source's extraction. Returns counts for the receipt. Pass the
    `vectors` embedded before the caller took its locks; without them they are embedded here."""
    vectors = vectors if vectors is not None else reconcile_vectors(extraction)
    counts = Reconciler(
        source=source, extractor=extractor, counts=Counter(), vectors=vectors.by_text, model_id=vectors.model_id
    ).run(extraction)
    counts.pop("writes", None)
    # Not every write here is audited (evidence on a claim said again, a node seen again): whoever calls, a search's
    # caches of the owner's memory are read again (memory.recall.held_vectors).
    memory_changed(source.owner_id)
    return counts

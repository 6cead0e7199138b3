"""Bringing history from elsewhere: an importer's plan (memory.importers) handed to the normal ingestion
service, so imported chats are stored, deduplicated and processed exactly like chats sent over REST.

Ids are the export's own (`chatgpt:<conversation id>` with its message ids, ...), so importing the same file
again stores nothing twice. The importers parse the whole file first, so a malformed file stores nothing. The
import itself commits in batches of IMPORT_BATCH sources: ingestion takes a lock per conversation until
commit and PostgreSQL's lock table is finite (about 15,000 in the embedded server), so one transaction could
not hold a large export. If ingestion refuses a conversation, that batch is rolled back, the batches before it
stay, and running the import again continues after them. A dry run performs the same ingestion and rolls
every batch back, so what it reports is what a real run would store."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction

from memory.access import Access
from memory.errors import ServiceError
from memory.importers.base import ImportPlan
from memory.models import Scope, Source, SourceKind
from memory.services.audit import audit_record
from memory.services.ingestion import IdentityRetired, ingest_conversation, ingest_transcript
from memory.services.ingestion_shapes import ConversationIn, TranscriptIn


@dataclass
class ImportSummary:
    """What an import stored (or, in a dry run, would store), what was there already, and what it skipped."""

    dry_run: bool
    origin: str
    imported: Counter[str] = field(default_factory=Counter)  # conversations, messages, transcripts, turns
    present: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    first: datetime | None = None
    last: datetime | None = None
    operation_ids: list[str] = field(default_factory=list)
    new: list[tuple[str, str, int]] = field(default_factory=list)  # (source id, title, pieces) per import

    def saw(self, moment: datetime | None) -> None:
        if moment is not None:
            self.first = moment if self.first is None else min(self.first, moment)
            self.last = moment if self.last is None else max(self.last, moment)

    def add(self, batch: ImportSummary) -> None:
        self.imported.update(batch.imported)
        self.present.update(batch.present)
        self.skipped.update(batch.skipped)
        self.saw(batch.first)
        self.saw(batch.last)
        self.operation_ids += batch.operation_ids
        self.new += batch.new


IMPORT_BATCH = 500


class ImportStopped(Exception):
    """Ingestion refused a source: `error` says why, `kept` what the batches before it stored."""

    def __init__(self, error: ServiceError, kept: ImportSummary, at: str) -> None:
        super().__init__(error.message)
        self.error, self.kept, self.at = error, kept, at


class _RollBack(Exception):
    """Ends a dry run's transaction after the work is counted."""


def history_import(*, access: Access, plan: ImportPlan, origin: str, dry_run: bool = False) -> ImportSummary:
    """Ingest every conversation and transcript of the plan into the access's write partition, batch by batch
    (ImportStopped when ingestion refuses one); with `dry_run` count the same and keep nothing."""
    access.require_scope(Scope.WRITE)
    summary = ImportSummary(dry_run=dry_run, origin=origin, skipped=plan.skipped.copy())
    items: list[ConversationIn | TranscriptIn] = [*plan.conversations, *plan.transcripts]
    for start in range(0, len(items), IMPORT_BATCH):
        batch = ImportSummary(dry_run=dry_run, origin=origin)
        item = items[start]
        try:
            with transaction.atomic():
                for item in items[start : start + IMPORT_BATCH]:
                    _import_one(access, item, batch)
                if dry_run:
                    raise _RollBack
        except _RollBack:
            batch.operation_ids = []  # rolled back: those receipts do not exist
        except ServiceError as exc:
            raise ImportStopped(exc, summary, at=item.id) from exc
        summary.add(batch)
    if summary.imported and not dry_run:
        with transaction.atomic():
            audit_record(
                actor=access.actor,
                owner=access.user,
                action="history.import",
                partition=access.write_partition(),
                target_type="import",
                target_id=origin,
                after=dict(summary.imported),
            )
    return summary


def _import_one(access: Access, item: ConversationIn | TranscriptIn, summary: ImportSummary) -> None:
    try:
        if isinstance(item, ConversationIn):
            _import_conversation(access, item, summary)
        else:
            _import_transcript(access, item, summary)
    except IdentityRetired:
        # The person erased it and asked that it never come back: an import is no reason to, nor to stop.
        summary.skipped["erased earlier (identity retired)"] += 1


def _import_transcript(access: Access, item: TranscriptIn, summary: ImportSummary) -> None:
    receipt = ingest_transcript(access=access, transcript=item)
    _count(summary, receipt.deduplicated, "transcript", "turn", len(item.segments))
    if not receipt.deduplicated:
        summary.operation_ids.append(receipt.operation.pk)
        summary.new.append((item.id, item.title, len(item.segments)))


def _import_conversation(access: Access, conversation: ConversationIn, summary: ImportSummary) -> None:
    stored = set(
        Source.objects.live()
        .filter(owner=access.user, partition=access.write_partition(), kind=SourceKind.MESSAGE,
                thread_id=conversation.id)
        .values_list("message_id", flat=True)
    )  # fmt: skip
    receipt = ingest_conversation(access=access, conversation=conversation)
    new = [] if receipt.deduplicated else [m for m in conversation.messages if m.id not in stored]
    erased = 0 if receipt.deduplicated else receipt.operation.counts.get("retiredSkipped", 0)
    if erased:
        summary.skipped["erased earlier (identity retired)"] += erased
    fresh = receipt.operation.counts.get("messages", 0) if new else 0
    summary.present["message"] += len(conversation.messages) - fresh - erased
    if not fresh:
        summary.present["conversation"] += 1
        return
    summary.imported["conversation"] += 1
    summary.imported["message"] += fresh
    summary.operation_ids.append(receipt.operation.pk)
    summary.new.append((conversation.id, conversation.title, fresh))
    for message in new:
        summary.saw(message.timestamp)


def _count(summary: ImportSummary, deduplicated: bool, whole: str, piece: str, pieces: int) -> None:
    target = summary.present if deduplicated else summary.imported
    target[whole] += 1
    target[piece] += pieces


def transcript_watermark(*, access: Access, origin: str, chat: str) -> dict[str, Any]:
    """The newest watermark an incremental importer left on its live transcripts of this chat in the write
    partition ({} when none): it lives with the imported data, so erasing that data resets it too."""
    contexts = (
        Source.objects.live()
        .filter(owner=access.user, partition=access.write_partition(), kind=SourceKind.TRANSCRIPT,
                source_context__origin=origin, source_context__chat=chat)
        .values_list("source_context", flat=True)
    )  # fmt: skip
    marks = [c["watermark"] for c in contexts if isinstance(c.get("watermark"), dict)]
    return max(marks, key=lambda mark: int(mark.get("position", 0)), default={})

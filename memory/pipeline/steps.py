"""The pipeline's steps, in order. Each has one job and a written contract:

- `run(job)` does its work for the job's source and returns counts to merge into the receipt;
- it is idempotent: a retry after a crash at any point runs it again safely;
- it raises `StepFailed(code, message)` for a failure the client should see; anything else is a bug and is
  recorded as INTERNAL_ERROR.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from django.conf import settings
from django.db import transaction

from memory.extraction.base import Extraction
from memory.models import Chunk, Operation, Source, SourceKind
from memory.models.copy_rows import copy_rows
from memory.pipeline import ahead
from memory.pipeline.chunking import ChunkDraft, chunks_for_source, message_context, turns_before
from memory.services.audit import memory_changed

if TYPE_CHECKING:
    from memory.models.sources import SourceQuerySet
    from memory.services.embeddings import Vectors

logger = logging.getLogger("memory.pipeline")


# The codes a receipt's `error_code` holds (the admin's filter offers these): a step's failures and the runner's own.
RECEIPT_ERROR_CODES = ("CONFLICT", "CONVERSION_FAILED", "INTERNAL_ERROR", "PROCESSING_INTERRUPTED")


class StepFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        if code not in RECEIPT_ERROR_CODES:
            raise ValueError(f"{code} is not a receipt's error code (RECEIPT_ERROR_CODES)")
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Job:
    operation: Operation
    source: Source
    # Handed from Extract to Reconcile within one run.
    extraction: Extraction | None = None
    extractor: str = ""
    pending: list[Source] = field(default_factory=list)
    vectors: Vectors | None = None  # embedded before the caller took its locks (curation)
    # Handed from ChunkText to Embed: chunk vectors written with the chunks, and whether the embedder failed then
    # (Embed then does not ask it again: a down embedder costs one call per step that needs it, not two).
    chunks_embedded: int = 0
    embedder_failed: bool = False

    def lock_source(self) -> None:
        """Inside a transaction: lock the source row and make sure it is still this receipt's version, so
        nothing derived from erased or replaced text is written (erasure takes the same lock)."""
        from memory.services.operations import operation_source_is_current

        current = Source.objects.select_for_update().filter(pk=self.source.pk).first()
        if current is None or not operation_source_is_current(self.operation, current):
            raise StepFailed("CONFLICT", "The source was replaced or erased while it was being processed.")

    def text_sources(self) -> list[Source]:
        """The sources whose text is read: the live messages of a conversation (or of a curated agent session,
        memory.services.curation), or the source itself."""
        if self.source.kind in (SourceKind.CONVERSATION, SourceKind.SESSION):
            return list(self.source.children.live().order_by("ordinal"))
        return [self.source]

    def unread_sources(self) -> list[Source]:
        """The sources no job has extracted yet: a conversation's live messages not extracted, in order (through
        the index `source_children_unread`: a job of one new turn reads that turn, however long the conversation),
        or the source itself while it is unread. Every turn is chunked and embedded before it is extracted, so
        these also hold every turn still to chunk or embed."""
        if self.source.kind in (SourceKind.CONVERSATION, SourceKind.SESSION):
            return list(self.unread_messages().order_by("ordinal"))
        return [self.source] if self.source.extracted_at is None else []

    def unread_messages(self) -> SourceQuerySet:
        """A conversation's (or session's) live messages not extracted yet, as a query."""
        return self.source.children.live().filter(extracted_at__isnull=True)


class Step:
    name: ClassVar[str]

    def run(self, job: Job) -> dict[str, int]:
        raise NotImplementedError


class Convert(Step):
    """Files: the original bytes become Markdown (markitdown). The blob is never changed."""

    name = "convert"

    def run(self, job: Job) -> dict[str, int]:
        source = job.source
        if source.kind != SourceKind.FILE or source.blob is None:
            return {}
        from memory.pipeline.conversion import ConversionError, convert_blob

        try:
            markdown = convert_blob(source.blob, filename=source.filename, mime_type=source.mime_type)
        except ConversionError as exc:
            raise StepFailed("CONVERSION_FAILED", str(exc)) from exc
        with transaction.atomic():
            job.lock_source()
            Source.objects.filter(pk=source.pk).update(markdown=markdown)
        source.markdown = markdown
        return {"convertedChars": len(markdown)}


class ChunkText(Step):
    """Split each text source into chunks (replacing earlier chunks of the same source), each inserted with its
    vector of the active model: a vector written by a later UPDATE cost a second row version and a second entry in
    every index of the row, the HNSW one the dearest (docs/benchmarks.md, issue 18). The vectors are embedded
    before the source lock (the embedder may be slow or down) from the drafts as they were then; under the lock
    a conversation's turns are drafted again (an erasure may have changed the turns before them meanwhile), a
    document's sources when they changed, and a vector is used only for the very texts it was made from (a turn's
    own and the turn before's). Without the embedder the chunks are stored without vectors (Embed's contract)."""

    name = "chunk"

    def run(self, job: Job) -> dict[str, int]:
        planned = _drafts(job)
        vectors = _chunk_vectors(job, planned)
        with transaction.atomic():
            # The lock also serialises two receipts of one conversation: the second sees the first's chunks.
            job.lock_source()
            sources, drafts = _drafts(job, planned)
            removed = 0
            if job.source.kind != SourceKind.CONVERSATION:  # messages to chunk have no chunks, by their query
                removed, _ = Chunk.objects.filter(source__in=sources).delete()
            created = _with_vectors(_chunks(drafts), vectors)
            copy_rows(Chunk, created)
            if created or removed:
                memory_changed(job.source.owner_id)  # what search reads of the turns (who spoke) is read anew
        job.chunks_embedded = sum(chunk.embedding is not None for chunk in created)
        return {"chunks": len(created)}


Drafts = tuple[list[Source], list[tuple[Source, list[ChunkDraft]]]]


def _drafts(job: Job, planned: Drafts | None = None) -> Drafts:
    """The sources to chunk and their drafts; a document's `planned` drafts (made earlier in this step) are kept
    when its sources to chunk are still the same ones (their text never changes within a source version)."""
    if job.source.kind == SourceKind.CONVERSATION:
        # Messages are immutable: each is chunked once and kept across later turns. A turn still to chunk is unread.
        # Its context is the turns before it, which an erasure changes: always drafted from them as they are now.
        sources = list(job.unread_messages().filter(chunks__isnull=True).order_by("ordinal"))
        return sources, _message_drafts(job.source, sources)
    sources = job.text_sources()
    if planned is not None and [source.pk for source in planned[0]] == [source.pk for source in sources]:
        return planned
    target = settings.CHUNK_TARGET_CHARS
    return sources, [(source, chunks_for_source(source, target=target)) for source in sources]


def chunk_texts(job: Job, planned: Drafts | None = None) -> list[str]:
    """Every text the job's chunk vectors are made from (their recipes), each once, in order."""
    from memory.services.embeddings import chunk_recipes, recipe_texts

    return recipe_texts(chunk_recipes(_chunks((planned or _drafts(job))[1]), in_order=True))


def _chunk_vectors(job: Job, planned: Drafts) -> Vectors:
    """The vectors of the job's chunk texts, by text: those embedded ahead of the job (memory.pipeline.ahead) and
    the rest."""
    from memory.services.embeddings import Vectors, texts_embed

    texts = chunk_texts(job, planned)
    found, model_id = ahead.vectors_ahead(job.operation.pk, texts)  # by the active model
    ahead.embed_next_job(besides=texts)
    vectors = texts_embed([text for text in texts if text not in found], event="pipeline.embedder_unavailable")
    job.embedder_failed = vectors.failed
    if not found:
        return vectors
    # The rest by the same model, or none of them (the embedder went down since: those chunks wait for the sweep).
    return Vectors({**found, **vectors.by_text}, model_id, failed=vectors.failed)


def _chunks(drafts: list[tuple[Source, list[ChunkDraft]]]) -> list[Chunk]:
    """The (unsaved) chunks of these drafts, in order."""
    return [_chunk(source, index, draft) for source, in_source in drafts for index, draft in enumerate(in_source)]


def _chunk(source: Source, index: int, draft: ChunkDraft) -> Chunk:
    return Chunk.of(
        source,
        authored_at=draft.authored_at,
        ordinal=index,
        text=draft.text,
        char_start=draft.start,
        char_end=draft.end,
        message_id=draft.message_id,
        speaker=draft.speaker,
        context=draft.context,
    )


def _with_vectors(chunks: list[Chunk], vectors: Vectors) -> list[Chunk]:
    """The job's chunks (its turns in order), each with its vector when every text its recipe needs was embedded
    (the drafts may have been made again under the lock: a vector is used only for the very texts it came from)."""
    from memory.services.embeddings import blended, chunk_recipes

    for chunk, recipe in zip(chunks, chunk_recipes(chunks, in_order=True), strict=True):
        vector = blended(recipe, vectors.by_text)
        if vector is not None:
            chunk.embedding, chunk.embedding_model = vector, vectors.model_id
    return chunks


def _message_drafts(conversation: Source, messages: list[Source]) -> list[tuple[Source, list[ChunkDraft]]]:
    """Chunks of new messages, each with the turns before it as context (earlier ones already stored)."""
    if not messages:
        return []
    previous = turns_before(conversation.pk, messages[0].ordinal)
    drafts = []
    for message in messages:
        context = message_context(message.speaker, previous)
        drafts.append((message, chunks_for_source(message, target=settings.CHUNK_TARGET_CHARS, context=context)))
        previous.append(message.text)
    return drafts


class Embed(Step):
    """Vectors for chunks that have none from the active model. An unavailable embedder skips, never fails:
    the text stays findable by keyword and `embeddings reindex` fills the vectors later."""

    name = "embed"

    def run(self, job: Job) -> dict[str, int]:
        from memory.embeddings import EmbedderUnavailable, get_embedder
        from memory.services.embeddings import CHUNK_VECTOR_FIELDS, chunks_embed, stale_vectors

        # A conversation's unread turns: a turn read by an earlier job had its vectors then, or the sweep makes them
        # (memory.sweep_missing_vectors), as for any chunk the embedder missed.
        sources = job.unread_messages() if job.source.kind == SourceKind.CONVERSATION else job.text_sources()
        chunks = Chunk.objects.filter(source__in=sources)
        if job.embedder_failed:  # it failed moments ago in ChunkText: not asked again within this job
            return {"embedded": job.chunks_embedded, "embeddingsSkipped": chunks.filter(embedding__isnull=True).count()}
        try:
            embedder = get_embedder()
            pending = list(chunks.filter(stale_vectors(embedder.model_id)).only(*CHUNK_VECTOR_FIELDS))
        except EmbedderUnavailable as exc:
            logger.warning("pipeline.embedder_unavailable", extra={"reason": str(exc)})
            return {"embeddingsSkipped": chunks.count()}
        batch, done = settings.EMBEDDING_BATCH_SIZE, job.chunks_embedded
        for offset in range(0, len(pending), batch):
            try:
                done += chunks_embed(pending[offset : offset + batch], embedder)
            except EmbedderUnavailable as exc:
                logger.warning("pipeline.embedder_unavailable", extra={"reason": str(exc)})
                return {"embedded": done, "embeddingsSkipped": len(pending) - (done - job.chunks_embedded)}
        return {"embedded": done}


class Extract(Step):
    """Candidate claims, tasks and people from the text not extracted yet (the configured extractor)."""

    name = "extract"

    def run(self, job: Job) -> dict[str, int]:
        job.pending = job.unread_sources()
        return self.read(job)

    @staticmethod
    def read(job: Job) -> dict[str, int]:
        """Extract from `job.pending` as it is. No database writes and no locks: the extractor may be a
        remote model that takes seconds (coord_curate calls this before it takes the session lock)."""
        from memory.extraction.registry import get_extractor, text_units

        extractor = get_extractor()
        job.extractor = f"{extractor.name}@{extractor.version}"
        job.extraction = extractor.extract(
            text_units(job.source, job.pending), timezone_name=settings.EXTRACTION_TIME_ZONE
        )
        if job.extraction.failure:
            # Nothing is stored, and these sources stay unextracted: the next job of the conversation (or a
            # retry) reads them again. The source itself is chunked and searchable already.
            job.pending = []
            return {"candidates": 0, "extractionFailed": 1}
        return {"candidates": job.extraction.size}


class Reconcile(Step):
    """The steward's policy decides what of the candidates is stored (memory.services.reconcile)."""

    name = "reconcile"

    def run(self, job: Job) -> dict[str, int]:
        from django.utils import timezone

        from memory.services.reconcile import reconcile, reconcile_vectors

        if job.extraction is None:
            return {}
        # Before the lock: the embedder may be slow or down (curation embeds before it locks the session).
        vectors = job.vectors if job.vectors is not None else reconcile_vectors(job.extraction)
        with transaction.atomic():
            job.lock_source()
            counts = reconcile(source=job.source, extraction=job.extraction, extractor=job.extractor, vectors=vectors)
            Source.objects.filter(pk__in=[source.pk for source in job.pending]).update(extracted_at=timezone.now())
            memory_changed(job.source.owner_id)  # its claims are audited one by one, the nodes it writes are not
        return counts


class Index(Step):
    """Vectors for the node cards of the source's partition that lack one of the active model (claims get
    theirs in Reconcile). An unavailable embedder skips; `embeddings reindex` catches up later."""

    name = "index"
    batch = 256

    def run(self, job: Job) -> dict[str, int]:
        from memory.embeddings import EmbedderUnavailable, get_embedder
        from memory.models import Node
        from memory.services.embeddings import nodes_embed, stale_vectors

        try:
            embedder = get_embedder()
            nodes = list(
                Node.objects.filter(owner_id=job.source.owner_id, partition_id=job.source.partition_id)
                .filter(stale_vectors(embedder.model_id), merged_into__isnull=True)
                .only("id", "type", "label", "summary")[: self.batch]
            )
            return {"nodesEmbedded": done} if (done := nodes_embed(nodes, embedder)) else {}
        except EmbedderUnavailable as exc:
            logger.warning("pipeline.embedder_unavailable", extra={"reason": str(exc)})
            return {}


class Notify(Step):
    """Tell the owner's open pages that a source is ready to read and search (receipt progress is pushed by the
    runner after every step; this is the one `source.processed` event)."""

    name = "notify"

    def run(self, job: Job) -> dict[str, int]:
        from memory.pipeline.progress import publish_source_processed

        publish_source_processed(job.source)
        return {}


PIPELINE: list[Step] = [Convert(), ChunkText(), Embed(), Extract(), Reconcile(), Index(), Notify()]

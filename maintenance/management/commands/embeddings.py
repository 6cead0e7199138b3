"""`manage.py embeddings status|probe|reindex`: vector upkeep of chunks, claims, nodes and metric definitions."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from maintenance.vectors import KIND_NAMES, vectors_reindex, vectors_status
from memory.embeddings import Embedder, EmbedderUnavailable, get_embedder
from memory.embeddings.minilm import MiniLMEmbedder
from memory.management.commands._tokens import user_by_name


class Command(BaseCommand):
    help = (
        "Embedding upkeep for claims, nodes, metric definitions and chunks. `status`: rows per kind with a vector "
        "of the active model, of another model, or none. `probe`: embed one query and time it. `reindex`: give "
        "rows without a vector of the active model one, in committed batches (stop it any time; run it again to "
        "continue). Nothing is deleted."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "probe", "reindex"])
        parser.add_argument("--user", help="Only this user's rows (username or external id). Default: everyone's.")
        parser.add_argument(
            "--kind", action="append", choices=KIND_NAMES, help="Only this kind (repeatable). Default: all."
        )
        parser.add_argument("--batch-size", type=int, default=settings.EMBEDDING_BATCH_SIZE, help="Rows per batch.")
        parser.add_argument("--pause", type=float, default=0.0, help="Seconds to wait between batches (throttle).")
        parser.add_argument("--limit", type=int, default=None, help="Re-embed at most this many rows, then stop.")
        parser.add_argument("--dry-run", action="store_true", help="Only count what reindex would re-embed.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        if options["pause"] < 0 or (options["limit"] is not None and options["limit"] < 1):
            raise CommandError("--pause must be 0 or more and --limit at least 1.")
        self.owner_id = user_by_name(options["user"]).pk if options["user"] else None
        try:
            embedder = get_embedder()
            getattr(self, options["action"])(embedder, options)
        except EmbedderUnavailable as exc:
            raise CommandError(f"The embedder is unavailable: {exc}") from exc

    def status(self, embedder: Embedder, options: dict[str, Any]) -> None:
        status = vectors_status(embedder=embedder, owner_id=self.owner_id, kinds=options["kind"])
        self.stdout.write(f"active model: {status.model_id}")
        for kind in status.kinds:
            self.stdout.write(
                f"{kind.kind}: {kind.total}, current model {kind.current}, other model {kind.other_model}, "
                f"missing {kind.missing}"
            )
            for model, count in kind.by_model.items():
                self.stdout.write(f"  {model}: {count}")
        if status.remaining:
            self.stdout.write(f"{status.remaining} row(s) need `manage.py embeddings reindex`.")

    def probe(self, embedder: Embedder, options: dict[str, Any]) -> None:
        started = time.perf_counter()
        vector = embedder.embed_query("What did I promise Marcel by Friday?")
        elapsed = (time.perf_counter() - started) * 1000
        variant = f", run as {embedder.variant}" if isinstance(embedder, MiniLMEmbedder) else ""
        self.stdout.write(f"model {embedder.model_id}: {len(vector)} dimensions, {elapsed:.0f} ms{variant}")

    def reindex(self, embedder: Embedder, options: dict[str, Any]) -> None:
        def report(kind: str, done: int, stale: int) -> None:
            self.stdout.write(f"{kind}: embedded {done}/{stale}")

        result = vectors_reindex(
            embedder=embedder, batch_size=options["batch_size"], owner_id=self.owner_id, kinds=options["kind"],
            limit=options["limit"], pause_s=options["pause"], dry_run=options["dry_run"], on_batch=report,
        )  # fmt: skip
        if result.dry_run:
            for kind, selected in result.selected.items():
                self.stdout.write(f"{kind}: would embed {selected}")
            return
        self.stdout.write(
            f"reindex complete: {result.total_embedded} row(s) embedded with {embedder.model_id}, "
            f"{result.total_remaining} remaining"
        )

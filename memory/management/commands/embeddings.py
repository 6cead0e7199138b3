"""`manage.py embeddings status|probe|reindex [--batch-size N]`."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.embeddings import EmbedderUnavailable, get_embedder
from memory.services.embeddings import embeddings_reindex, embeddings_status


class Command(BaseCommand):
    help = "Embedding maintenance: coverage by model, a live probe, and a resumable reindex."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "probe", "reindex"])
        parser.add_argument("--batch-size", type=int, default=settings.EMBEDDING_BATCH_SIZE)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            embedder = get_embedder()
            getattr(self, options["action"])(embedder, options)
        except EmbedderUnavailable as exc:
            raise CommandError(f"The embedder is unavailable: {exc}") from exc

    def status(self, embedder: Any, options: dict[str, Any]) -> None:
        coverage = embeddings_status(embedder)
        self.stdout.write(f"active model: {coverage.model_id}")
        self.stdout.write(f"chunks: {coverage.total}, with vectors of the active model: {coverage.current}")
        for model, count in sorted(coverage.by_model.items()):
            self.stdout.write(f"  {model}: {count}")
        stale = coverage.total - coverage.current
        if stale:
            self.stdout.write(f"{stale} chunk(s) need `manage.py embeddings reindex`.")

    def probe(self, embedder: Any, options: dict[str, Any]) -> None:
        started = time.perf_counter()
        vector = embedder.embed_query("What did I promise Marcel by Friday?")
        elapsed = (time.perf_counter() - started) * 1000
        self.stdout.write(f"model {embedder.model_id}: {len(vector)} dimensions, {elapsed:.0f} ms")

    def reindex(self, embedder: Any, options: dict[str, Any]) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")

        def report(done: int, total: int) -> None:
            self.stdout.write(f"embedded {done}/{total}")

        done = embeddings_reindex(embedder, batch_size=options["batch_size"], on_batch=report)
        self.stdout.write(f"reindex complete: {done} chunk(s) embedded with {embedder.model_id}")

"""Planner statistics for the memory tables right after the pipeline changed many of their rows.

A store searched right after a large ingestion had none: autovacuum analyses a table only once 10 % of it has
changed and only every minute, and until then PostgreSQL plans the search from guesses (a fresh store's LoCoMo
queries took p50 102 ms, 36 ms after a 0.14 s ANALYZE; issue 18). So a worker checks after each job it finished
and analyses the tables that changed enough. A table analysed by any worker less than ANALYZE_INTERVAL_S before
is left to the next check: Celery beat makes one every 30 s (memory.refresh_planner_statistics), so the last
jobs of an ingestion are analysed too when no job follows them. Migration 0022 lowers autovacuum's own thresholds
on the same tables as the backstop for changes made elsewhere (API writes, erasure).
"""

from __future__ import annotations

import logging

from django.core.cache import cache
from django.db import DatabaseError, connection, transaction
from redis.exceptions import RedisError

from memory.models import Alias, Chunk, Claim, Evidence, Node, Source

logger = logging.getLogger("memory.pipeline")

# A table is analysed at most once per this many seconds across all workers (a Redis key per table): two workers
# finishing jobs together would otherwise both analyse it, the second queued behind the first's lock.
ANALYZE_INTERVAL_S = 2
# Worth an ANALYZE: at least this many rows changed since the last one, and at least this share of the table
# (an ANALYZE samples at most 30,000 rows, ~0.1-0.3 s here, so a large table is analysed seldom).
MIN_CHANGED_ROWS = 200
MIN_CHANGED_SHARE = 0.10
TABLES = tuple(model._meta.db_table for model in (Source, Chunk, Claim, Evidence, Node, Alias))


def recently_analysed_key(table: str) -> str:
    return f"pipeline:analysed:{table}"


def planner_statistics_refresh() -> list[str]:
    """ANALYZE the memory tables that changed by at least MIN_CHANGED_ROWS rows and MIN_CHANGED_SHARE of their
    size since their last analysis (ours or autovacuum's), unless one was analysed by any worker less than
    ANALYZE_INTERVAL_S ago. Returns the tables analysed. A table another session is analysing or vacuuming is
    skipped, never waited for; a failure is logged, never raised (the job it follows is done). Costs one query
    when nothing is due."""
    try:
        with connection.cursor() as cursor:
            # This process's own counts reach the shared statistics when its session is next idle: force that
            # now (after this statement), so the query below sees the job just done.
            cursor.execute("SELECT pg_stat_force_next_flush()")
            # The two counts of pg_stat_user_tables, read without the view (which computes some twenty counts of
            # each table and is planned anew each time): the check 0.53-0.60 -> 0.22 ms. A table missing (a
            # worker ahead of the migrations) is left out, as the view would leave it out.
            cursor.execute(
                "SELECT relname, pg_stat_get_mod_since_analyze(oid), pg_stat_get_live_tuples(oid) FROM pg_class"
                " WHERE oid IN (SELECT to_regclass(name) FROM unnest(%s::text[]) AS name)",
                [list(TABLES)],
            )
            changed = cursor.fetchall()
    except DatabaseError:
        logger.warning("pipeline.analyze_failed", exc_info=True)
        return []
    analysed: list[str] = []
    for table, rows_changed, rows in sorted(changed):
        if rows_changed < max(MIN_CHANGED_ROWS, MIN_CHANGED_SHARE * rows) or not _first_in_interval(table):
            continue
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '100ms'")
                cursor.execute(f'ANALYZE "{table}"')  # a name from TABLES, never from input
        except DatabaseError:  # busy (another ANALYZE, autovacuum) or the database is away: next time
            logger.warning("pipeline.analyze_failed", extra={"table": table}, exc_info=True)
            continue
        analysed.append(table)
    if analysed:
        logger.info("pipeline.analyzed", extra={"tables": analysed})
    return analysed


def _first_in_interval(table: str) -> bool:
    try:
        return bool(cache.add(recently_analysed_key(table), 1, timeout=ANALYZE_INTERVAL_S))
    except RedisError:  # Redis away: the lock timeout alone keeps two analyses from queueing
        return True

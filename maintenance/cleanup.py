"""Routine repairs in one call (seeds/000 /cleanup), in this order: statusless-task recovery (so a task with no
status gets one before anything judges it), orphan pruning (so an orphan is deleted rather than merged), then
the exact-duplicate sweep; applying also runs the claim expiry and trust-decay sweep. Idempotent: a second
apply finds nothing left to do. A dry run (the default) only counts and lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from commitments.services import Recovery, recover_statusless
from maintenance.dedup import DedupResult, dedup_sweep
from maintenance.orphans import OrphanPreview, prune_orphans_apply, prune_orphans_preview
from maintenance.pruning import Applied
from memory.access import Access
from memory.models import Scope
from memory.services.lifecycle import MaintenanceResult, run_maintenance

ORPHAN_SAMPLE = 50


@dataclass(frozen=True)
class CleanupResult:
    dry_run: bool
    recovery: Recovery | None = None
    orphans: OrphanPreview | None = None  # what the orphan step found (before it applied)
    orphans_applied: Applied | None = None
    dedup: DedupResult | None = None
    lifecycle: MaintenanceResult | None = None


def cleanup_run(
    *, access: Access, dry_run: bool = True, recover: bool = True, prune_orphans: bool = True, dedup: bool = True
) -> CleanupResult:
    """Run the chosen steps in order over the partitions this request reads; applying needs `maintenance`."""
    access.require_scope(Scope.READ if dry_run else Scope.MAINTENANCE)
    recovery = recover_statusless(access, dry_run=dry_run) if recover else None
    found = prune_orphans_preview(access=access, limit=ORPHAN_SAMPLE) if prune_orphans else None
    applied = prune_orphans_apply(access=access) if prune_orphans and not dry_run else None
    merged = dedup_sweep(access=access, dry_run=dry_run) if dedup else None
    lifecycle = None
    if not dry_run:
        lifecycle = run_maintenance(owner_id=access.user.pk, partition_ids=access.read_partition_ids)
    return CleanupResult(
        dry_run=dry_run, recovery=recovery, orphans=found, orphans_applied=applied, dedup=merged, lifecycle=lifecycle
    )

"""The scratchpad: one working note per partition. Writes and edits carry the version they expect, so two
assistants never overwrite each other silently (CONFLICT when stale)."""

from __future__ import annotations

from django.db import transaction

from memory.access import Access
from memory.errors import Conflict, ValidationFailed
from memory.models import Scope, Scratchpad
from memory.screening import sanitize_text
from memory.services.audit import audit_record

MAX_SCRATCHPAD_CHARS = 100_000


def scratchpad_read(access: Access) -> Scratchpad:
    """The strict partition's scratchpad (version 0 and empty when never written)."""
    access.require_scope(Scope.READ)
    partition = access.partition
    if partition is None:
        raise ValidationFailed("Name a partition to read its scratchpad.", details={"partitionKey": ["Required."]})
    return Scratchpad.objects.filter(partition=partition).first() or Scratchpad(
        owner=access.user, partition=partition, content="", version=0
    )


def _locked(access: Access, expected_version: int | None) -> Scratchpad:
    access.require_scope(Scope.WRITE)
    partition = access.write_partition()
    pad, _ = Scratchpad.objects.select_for_update().get_or_create(partition=partition, defaults={"owner": access.user})
    if expected_version is not None and expected_version != pad.version:
        raise Conflict(
            "The scratchpad changed since you read it; read it again and reapply your change.",
            details={"expectedVersion": expected_version, "currentVersion": pad.version},
        )
    return pad


def _store(access: Access, pad: Scratchpad, content: str, action: str) -> Scratchpad:
    if len(content) > MAX_SCRATCHPAD_CHARS:
        raise ValidationFailed(
            "The scratchpad is too long.", details={"content": [f"At most {MAX_SCRATCHPAD_CHARS} characters."]}
        )
    before = pad.version
    pad.content, pad.version = content, pad.version + 1
    pad.save()
    audit_record(
        actor=access.actor, owner=access.user, action=action, target=pad, partition=pad.partition,
        before={"version": before}, after={"version": pad.version, "chars": len(content)},
    )  # fmt: skip
    return pad


@transaction.atomic
def scratchpad_write(*, access: Access, content: str, expected_version: int | None = None) -> Scratchpad:
    """Replace the whole scratchpad."""
    pad = _locked(access, expected_version)
    return _store(access, pad, sanitize_text(content), "scratchpad.write")


@transaction.atomic
def scratchpad_edit(
    *, access: Access, find: str, replace: str, expected_version: int, replace_all: bool = False
) -> Scratchpad:
    """Find and replace: `find` must occur exactly once unless `replace_all`."""
    if not find:
        raise ValidationFailed("Say what to find.", details={"find": ["Required."]})
    pad = _locked(access, expected_version)
    occurrences = pad.content.count(find)
    if occurrences == 0 or (occurrences > 1 and not replace_all):
        raise Conflict(
            "The text to replace must occur exactly once (or send replaceAll).",
            details={"occurrences": occurrences},
        )
    content = pad.content.replace(find, sanitize_text(replace), -1 if replace_all else 1)
    return _store(access, pad, content, "scratchpad.edit")

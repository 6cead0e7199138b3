"""MemoryEvent is append-only; erasure blanks content but keeps the fact of a change."""

from __future__ import annotations

import pytest

from memory.access import Actor
from memory.models import MemoryEvent, Partition
from memory.services.audit import audit_erase_target, audit_record

pytestmark = pytest.mark.django_db


def test_events_cannot_be_edited(alice) -> None:
    partition = Partition.objects.get(owner=alice, key="memory:personal")
    event = audit_record(
        actor=Actor.system(), owner=alice, action="partition.note", target=partition, after={"label": "x"}
    )
    event.action = "tampered"
    with pytest.raises(TypeError):
        event.save()
    assert MemoryEvent.objects.get(pk=event.pk).action == "partition.note"


def test_erasure_removes_content_from_audit_rows(alice) -> None:
    partition = Partition.objects.get(owner=alice, key="memory:personal")
    audit_record(
        actor=Actor.person(alice), owner=alice, action="partition.rename", target=partition,
        before={"label": "Diary"}, after={"label": "Health notes"},
    )  # fmt: skip
    assert audit_erase_target(owner=alice, target_type="partition", target_id=partition.pk) == 1
    event = MemoryEvent.objects.get(action="partition.rename")
    assert (event.before, event.after) == (None, None)
    assert event.erased_at is not None
    assert event.actor_kind == "user"
    assert event.id.startswith("evt_")

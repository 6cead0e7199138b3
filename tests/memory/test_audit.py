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


def test_every_action_the_code_records_has_its_words() -> None:
    """Each `action="…"` the code passes (to audit_record or a helper of it) is in the activity's vocabulary, which
    the activity page's and the admin's filters offer: an action missing there could not be filtered for."""
    import ast
    from pathlib import Path

    from memory.activity import WORDS

    root = Path(__file__).resolve().parents[2]
    recorded: dict[str, str] = {}
    for package in ("memory", "commitments", "metrics", "maintenance", "mcp_bridge"):
        for path in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                for keyword in node.keywords if isinstance(node, ast.Call) else []:
                    value = keyword.value
                    if keyword.arg == "action" and isinstance(value, ast.Constant) and "." in str(value.value):
                        recorded[str(value.value)] = str(path.relative_to(root))
    assert len(recorded) > 30  # the walk found the code's actions
    assert {action: path for action, path in recorded.items() if action not in WORDS} == {}

"""The scratchpad: versioned writes and edits, CONFLICT when stale, one per partition, wrapped reads."""

from __future__ import annotations

import pytest

from memory.models import MemoryEvent
from memory.screening import CLOSE_MARKER, OPEN_MARKER
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db


def test_an_unwritten_scratchpad_reads_empty_at_version_zero(api: Api, owner: Persona) -> None:
    body = api.post("/scratchpad/read", owner).json()
    assert (body["content"], body["version"]) == (f"{OPEN_MARKER}\n\n{CLOSE_MARKER}", 0)


def test_write_then_edit_at_the_version_read(api: Api, owner: Persona) -> None:
    written = api.post("/scratchpad/write", owner, {"content": "Plan: call Anna today.", "expectedVersion": 0}).json()
    assert written["version"] == 1
    edited = api.post("/scratchpad/edit", owner, {"find": "today", "replace": "tomorrow", "expectedVersion": 1})
    assert edited.json()["version"] == 2
    assert "Plan: call Anna tomorrow." in api.post("/scratchpad/read", owner).json()["content"]
    assert MemoryEvent.objects.filter(action__startswith="scratchpad.").count() == 2


def test_a_stale_version_is_a_conflict_and_changes_nothing(api: Api, owner: Persona) -> None:
    api.post("/scratchpad/write", owner, {"content": "v1"})
    api.post("/scratchpad/write", owner, {"content": "v2"})
    stale = api.post("/scratchpad/write", owner, {"content": "mine", "expectedVersion": 1})
    assert stale.status_code == 409
    assert error_code(stale) == "CONFLICT"
    assert stale.json()["error"]["details"] == {"expectedVersion": 1, "currentVersion": 2}
    assert "v2" in api.post("/scratchpad/read", owner).json()["content"]


def test_an_edit_must_find_its_text_exactly_once(api: Api, owner: Persona) -> None:
    api.post("/scratchpad/write", owner, {"content": "a b a"})
    assert error_code(api.post("/scratchpad/edit", owner, {"find": "a", "replace": "x", "expectedVersion": 1})) == (
        "CONFLICT"
    )
    assert error_code(api.post("/scratchpad/edit", owner, {"find": "z", "replace": "x", "expectedVersion": 1})) == (
        "CONFLICT"
    )
    body = {"find": "a", "replace": "x", "expectedVersion": 1, "replaceAll": True}
    assert api.post("/scratchpad/edit", owner, body).json()["version"] == 2
    assert "x b x" in api.post("/scratchpad/read", owner).json()["content"]


def test_each_partition_has_its_own_scratchpad(api: Api, owner: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    api.post("/scratchpad/write", owner, {"content": "apollo notes", "partitionKey": "project:apollo"})
    assert "apollo notes" not in api.post("/scratchpad/read", owner).json()["content"]
    apollo = api.post("/scratchpad/read", owner, {"partitionKey": "project:apollo"}).json()
    assert "apollo notes" in apollo["content"]


def test_forged_markers_are_escaped(api: Api, owner: Persona) -> None:
    api.post("/scratchpad/write", owner, {"content": f"x {CLOSE_MARKER} y"})
    assert api.post("/scratchpad/read", owner).json()["content"].count(CLOSE_MARKER) == 1


def test_scopes_and_other_users(api: Api, owner: Persona, other: Persona, alice) -> None:
    api.post("/scratchpad/write", owner, {"content": "private"})
    reader = issue(alice, "reader", scopes=["read"])
    assert error_code(api.post("/scratchpad/write", reader, {"content": "x"})) == "SCOPE_REQUIRED"
    assert "private" not in api.post("/scratchpad/read", other).json()["content"]
    response = api.post("/scratchpad/read", other, {"userId": "alice"})
    assert error_code(response) == "NOT_FOUND"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [("/scratchpad/write", {}, "content"), ("/scratchpad/write", {"content": "x", "expectedVersion": -1},
     "expectedVersion"), ("/scratchpad/edit", {"find": "a", "replace": "b"}, "expectedVersion")],
)  # fmt: skip
def test_malformed_scratchpad_calls(api: Api, owner: Persona, path: str, body: dict, field: str) -> None:
    response = api.post(path, owner, body)
    assert response.status_code == 400
    assert field in response.json()["error"]["details"]

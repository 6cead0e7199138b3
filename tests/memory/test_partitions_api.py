"""POST /partitions/list, /partitions/create, /partitions/deactivate (personas in test_endpoint_contract too)."""

from __future__ import annotations

import pytest

from memory.models import MemoryEvent, Partition, Scope
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db


def test_owner_lists_own_partitions(api: Api, owner: Persona, alice, bob) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    PartitionFactory.create(owner=alice, key="project:old", is_active=False)
    PartitionFactory.create(owner=bob, key="project:bobs")
    body = api.post("/partitions/list", owner).json()
    assert [(p["key"], p["isActive"]) for p in body["partitions"]] == [
        ("memory:personal", True),
        ("project:apollo", True),
        ("project:old", False),
    ]
    active = api.post("/partitions/list", owner, {"activeOnly": True}).json()
    assert [p["key"] for p in active["partitions"]] == ["memory:personal", "project:apollo"]


def test_other_user_never_sees_owners_partitions(api: Api, other: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    keys = [p["key"] for p in api.post("/partitions/list", other).json()["partitions"]]
    assert keys == ["memory:personal"]


def test_owner_creates_a_partition_and_it_is_audited(api: Api, owner: Persona, alice) -> None:
    response = api.post("/partitions/create", owner, {"key": "project:apollo", "label": "Apollo"})
    assert response.status_code == 201
    partition = response.json()["partition"]
    assert (partition["key"], partition["label"], partition["isActive"]) == ("project:apollo", "Apollo", True)
    assert partition["id"].startswith("prt_")
    event = MemoryEvent.objects.get(action="partition.create")
    assert (event.owner, event.actor_kind, event.actor_token_id) == (alice, "token", owner.token.pk)  # type: ignore[union-attr]


def test_creating_an_existing_key_is_a_conflict(api: Api, owner: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo", is_active=False)
    response = api.post("/partitions/create", owner, {"key": "project:apollo"})
    assert response.status_code == 409
    assert error_code(response) == "CONFLICT"
    assert Partition.objects.filter(owner=alice, key="project:apollo").count() == 1


def test_same_key_for_two_users_is_two_partitions(api: Api, owner: Persona, other: Persona) -> None:
    assert api.post("/partitions/create", owner, {"key": "project:x"}).status_code == 201
    assert api.post("/partitions/create", other, {"key": "project:x"}).status_code == 201


@pytest.mark.parametrize("key", ["", "Project", "has space", "-lead", "x" * 65, "emoji🙂"])
def test_invalid_keys_are_validation_errors(api: Api, owner: Persona, key: str) -> None:
    response = api.post("/partitions/create", owner, {"key": key})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert "key" in response.json()["error"]["details"]


def test_read_only_token_cannot_create(api: Api, alice) -> None:
    reader = issue(alice, "reader", scopes=[Scope.READ])
    response = api.post("/partitions/create", reader, {"key": "project:apollo"})
    assert response.status_code == 403
    assert error_code(response) == "SCOPE_REQUIRED"
    assert response.json()["error"]["details"] == {"requiredScope": "write"}
    assert not Partition.objects.filter(key="project:apollo").exists()


def test_partition_limited_token_cannot_create(api: Api, alice) -> None:
    limited = issue(alice, "limited", partition_keys=["memory:personal"])
    assert error_code(api.post("/partitions/create", limited, {"key": "project:apollo"})) == "SCOPE_REQUIRED"


def test_host_token_creates_for_the_user_it_acts_for(api: Api, host: Persona, alice) -> None:
    response = api.post("/partitions/create", host, {"userId": "alice", "key": "project:apollo"})
    assert response.status_code == 201
    assert Partition.objects.filter(owner=alice, key="project:apollo").exists()


def test_owner_deactivates_and_nothing_is_deleted(api: Api, owner: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    response = api.post("/partitions/deactivate", owner, {"key": "project:apollo"})
    assert response.status_code == 200
    assert response.json()["partition"]["isActive"] is False
    partition = Partition.objects.get(owner=alice, key="project:apollo")
    assert partition.deactivated_at is not None
    again = api.post("/partitions/deactivate", owner, {"key": "project:apollo"})
    assert again.status_code == 200
    assert MemoryEvent.objects.filter(action="partition.deactivate").count() == 1
    keys = api.post("/whoami", owner, headers={"X-Memory-Access-Scope": "workspace"}).json()
    assert keys["access"]["readPartitionKeys"] == ["memory:personal"]


def test_other_user_cannot_deactivate_owners_partition(api: Api, other: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    response = api.post("/partitions/deactivate", other, {"key": "project:apollo"})
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"
    assert Partition.objects.get(owner=alice, key="project:apollo").is_active


def test_personal_partition_cannot_be_deactivated(api: Api, owner: Persona) -> None:
    response = api.post("/partitions/deactivate", owner, {"key": "memory:personal"})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


def test_deactivation_needs_the_edit_scope(api: Api, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    writer = issue(alice, "writer", scopes=[Scope.READ, Scope.WRITE])
    response = api.post("/partitions/deactivate", writer, {"key": "project:apollo"})
    assert response.status_code == 403
    assert error_code(response) == "SCOPE_REQUIRED"


def test_listing_needs_the_read_scope(api: Api, alice) -> None:
    writer = issue(alice, "writer", scopes=[Scope.WRITE])
    assert error_code(api.post("/partitions/list", writer)) == "SCOPE_REQUIRED"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/partitions/create", {}, "key"),
        ("/partitions/create", {"key": ["a"]}, "key"),
        ("/partitions/create", {"key": "project:a", "label": {"x": 1}}, "label"),
        ("/partitions/list", {"activeOnly": "perhaps"}, "activeOnly"),
        ("/partitions/deactivate", {"key": None}, "key"),
        ("/partitions/list", {"colour": "blue"}, "colour"),
    ],
)
def test_malformed_input_names_the_field(api: Api, owner: Persona, path: str, body: dict, field: str) -> None:
    response = api.post(path, owner, body)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]

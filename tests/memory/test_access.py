"""The Access model: strict vs workspace, partition limits, host tokens, 404 for anything out of reach."""

from __future__ import annotations

import pytest

from memory.access import access_for_token, access_for_user
from memory.errors import NotFound, PartitionInactive, ScopeRequired, ValidationFailed
from memory.models import Partition, Scope
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db

WORKSPACE = {"X-Memory-Access-Scope": "workspace"}


def read_keys(
    api: Api, persona: Persona, body: dict | None = None, *, headers: dict[str, str] | None = None
) -> list[str]:
    response = api.post("/whoami", persona, body, headers=headers)
    assert response.status_code == 200, response.content
    return list(response.json()["access"]["readPartitionKeys"])


def test_every_user_has_a_personal_partition(alice) -> None:
    assert Partition.objects.filter(owner=alice, key="memory:personal", is_active=True).exists()


def test_strict_access_defaults_to_the_personal_partition(api: Api, owner: Persona) -> None:
    assert read_keys(api, owner) == ["memory:personal"]


def test_explicit_partition_limits_a_strict_request(api: Api, owner: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    assert read_keys(api, owner, {"partitionKey": "project:apollo"}) == ["project:apollo"]


def test_workspace_reads_span_active_partitions_only(api: Api, owner: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    PartitionFactory.create(owner=alice, key="project:old", is_active=False)
    assert read_keys(api, owner, headers=WORKSPACE) == ["memory:personal", "project:apollo"]


def test_explicit_partition_still_limits_a_workspace_request(api: Api, owner: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    assert read_keys(api, owner, {"partitionKey": "project:apollo"}, headers=WORKSPACE) == ["project:apollo"]


def test_workspace_never_includes_another_users_partitions(api: Api, owner: Persona, bob) -> None:
    PartitionFactory.create(owner=bob, key="project:bobs")
    assert read_keys(api, owner, headers=WORKSPACE) == ["memory:personal"]


def test_another_users_partition_is_not_found(api: Api, owner: Persona, bob) -> None:
    PartitionFactory.create(owner=bob, key="project:bobs")
    response = api.post("/whoami", owner, {"partitionKey": "project:bobs"})
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"


def test_token_limited_to_partitions_cannot_reach_others(api: Api, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    PartitionFactory.create(owner=alice, key="project:hermes")
    limited = issue(alice, "limited", partition_keys=["project:apollo"], default_partition_key="project:apollo")
    assert read_keys(api, limited) == ["project:apollo"]
    assert read_keys(api, limited, headers=WORKSPACE) == ["project:apollo"]
    response = api.post("/whoami", limited, {"partitionKey": "project:hermes"})
    assert error_code(response) == "NOT_FOUND"


def test_another_users_id_is_not_found_for_a_personal_token(api: Api, owner: Persona) -> None:
    response = api.post("/whoami", owner, {"userId": "bob"})
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"


def test_own_user_id_is_accepted(api: Api, owner: Persona) -> None:
    assert api.post("/whoami", owner, {"userId": "alice"}).json()["userId"] == "alice"


def test_host_token_acts_for_its_users(api: Api, host: Persona) -> None:
    response = api.post("/whoami", host, {"userId": "alice"})
    assert response.status_code == 200
    assert response.json()["userId"] == "alice"


def test_host_token_cannot_act_for_other_users(api: Api, host: Persona, bob) -> None:
    response = api.post("/whoami", host, {"userId": "bob"})
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"


def test_host_token_must_name_the_user(api: Api, host: Persona) -> None:
    response = api.post("/whoami", host)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert "userId" in response.json()["error"]["details"]


def test_writes_are_strict_even_with_workspace_access(owner: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    assert owner.token is not None
    access = access_for_token(token=owner.token, user_id=None, partition_key=None, workspace=True)
    assert access.workspace is True
    assert len(access.read_partitions) == 2
    assert access.write_partition().key == "memory:personal"


def test_writes_to_an_inactive_partition_are_refused(owner: Persona, alice) -> None:
    PartitionFactory.create(owner=alice, key="project:old", is_active=False)
    assert owner.token is not None
    access = access_for_token(token=owner.token, user_id=None, partition_key="project:old", workspace=False)
    assert [p.key for p in access.read_partitions] == ["project:old"]  # still readable when named
    with pytest.raises(PartitionInactive):
        access.write_partition()


def test_mutation_checks_the_objects_real_partition(owner: Persona, alice, bob) -> None:
    apollo = PartitionFactory.create(owner=alice, key="project:apollo")
    bobs = PartitionFactory.create(owner=bob, key="project:apollo")
    assert owner.token is not None
    access = access_for_token(token=owner.token, user_id=None, partition_key=None, workspace=False)
    access.check_write(apollo)  # another partition of the same user, resolved from the object
    with pytest.raises(NotFound):
        access.check_write(bobs)


def test_scopes_come_from_the_token(alice) -> None:
    reader = issue(alice, "reader", scopes=[Scope.READ])
    assert reader.token is not None
    access = access_for_token(token=reader.token, user_id=None, partition_key=None, workspace=False)
    access.require_scope(Scope.READ)
    with pytest.raises(ScopeRequired):
        access.require_scope(Scope.WRITE)


def test_web_user_access_has_every_scope_and_partition(alice) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    access = access_for_user(user=alice, workspace=True)
    assert {p.key for p in access.read_partitions} == {"memory:personal", "project:apollo"}
    assert access.scopes == frozenset(Scope.values)


def test_host_access_without_user_is_a_validation_error(host: Persona) -> None:
    assert host.token is not None
    with pytest.raises(ValidationFailed):
        access_for_token(token=host.token, user_id=None, partition_key=None, workspace=False)

"""Artifacts follow the partition they were put through (issue 12, item 11): the bytes are kept once per
owner, but a token limited to one partition neither lists nor reads what was put through another."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memory.models import Blob, Partition, Scope, User
from tests.conftest import Api, Persona, error_code, issue

pytestmark = pytest.mark.django_db

DATA = b"the apollo launch plan"
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def projects(alice: User) -> None:
    for key in ("project:a", "project:b"):
        Partition.objects.create(owner=alice, key=key, label=key)


def limited_to(user: User, key: str) -> Persona:
    return issue(user, f"only {key}", scopes=Scope.values, partition_keys=[key], default_partition_key=key)


def put(api: Api, persona: Persona, data: bytes, partition: str = "") -> Any:
    query = f"?partitionKey={partition}" if partition else ""
    return api.client.put(f"/artifact{query}", data=data, content_type="text/plain", headers=persona.headers)


def get(api: Api, persona: Persona, sha: str, query: str = "", **headers: str) -> Any:
    return api.client.get(f"/artifact/{sha}{query}", headers={**persona.headers, **headers})


def listed(api: Api, persona: Persona, body: dict[str, Any] | None = None, *, workspace: bool = False) -> list[str]:
    headers = {"x-memory-access-scope": "workspace"} if workspace else {}
    response = api.post("/artifact/list", persona, body or {}, headers=headers)
    assert response.status_code == 200, response.content
    return [artifact["sha256"] for artifact in response.json()["artifacts"]]


def test_a_token_limited_to_one_partition_cannot_list_or_read_another_partitions_artifact(
    api: Api, owner: Persona, alice: User, projects: None
) -> None:
    assert put(api, owner, DATA, "project:a").status_code == 201
    only_b = limited_to(alice, "project:b")

    assert listed(api, only_b) == []
    response = get(api, only_b, SHA)
    assert (response.status_code, error_code(response)) == (404, "NOT_FOUND")
    assert get(api, only_b, SHA, "", Range="bytes=0-3").status_code == 404
    assert listed(api, limited_to(alice, "project:a")) == [SHA]


def test_a_strict_read_sees_only_its_own_partitions_artifacts(api: Api, owner: Persona, projects: None) -> None:
    put(api, owner, DATA, "project:a")

    assert listed(api, owner) == []  # the token's default: memory:personal
    assert listed(api, owner, {"partitionKey": "project:a"}) == [SHA]
    assert listed(api, owner, workspace=True) == [SHA]
    assert get(api, owner, SHA).status_code == 404
    assert get(api, owner, SHA, "?partitionKey=project:a").status_code == 200


def test_the_same_bytes_put_through_a_second_partition_are_kept_once_and_do_not_reveal_the_first(
    api: Api, owner: Persona, alice: User, projects: None
) -> None:
    put(api, owner, DATA, "project:a")
    only_b = limited_to(alice, "project:b")

    second = put(api, only_b, DATA)

    assert second.status_code == 201, second.content
    assert second.json()["deduplicated"] is False  # "already stored" would tell b that a holds these bytes
    assert Blob.objects.filter(owner=alice, sha256=SHA).count() == 1
    assert listed(api, only_b) == [SHA]
    assert get(api, only_b, SHA).status_code == 200
    again = put(api, only_b, DATA)
    assert (again.status_code, again.json()["deduplicated"]) == (200, True)


def test_a_file_sources_original_stays_readable_in_its_partition(
    api: Api, owner: Persona, alice: User, projects: None
) -> None:
    only_a = limited_to(alice, "project:a")
    response = api.client.post(
        "/ingest/file",
        {"document": '{"id": "plan"}', "file": SimpleUploadedFile("plan.txt", DATA, content_type="text/plain")},
        headers=only_a.headers,
    )
    assert response.status_code == 202, response.content

    assert get(api, only_a, SHA).status_code == 200
    assert get(api, limited_to(alice, "project:b"), SHA).status_code == 404

"""Hostile input answers in the one error shape, never a 500 and never a half-write (issue 12, item 9)."""

from __future__ import annotations

from datetime import date

import pytest
from django.test import override_settings

from memory.extraction.dates import resolve_day
from memory.models import Claim, Partition, Source
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona, error_code

pytestmark = pytest.mark.django_db


def nested(depth: int) -> str:
    return '{"key": "project:deep", "label": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [1200, 100_000])
def test_deeply_nested_json_is_a_validation_error_naming_the_limit(api: Api, owner: Persona, depth: int) -> None:
    response = api.post("/partitions/create", owner, raw=nested(depth))

    assert response.status_code == 400, response.content
    assert error_code(response) == "VALIDATION_ERROR"
    assert response.json()["error"]["details"]["maxDepth"] == 64
    assert not Partition.objects.filter(key="project:deep").exists()


@override_settings(MAX_JSON_DEPTH=5)
def test_the_depth_limit_is_a_setting(api: Api, owner: Persona) -> None:
    within = api.post("/memory/save", owner, {"key": "k", "value": {"a": {"b": {"c": 1}}}})
    beyond = api.post("/memory/save", owner, {"key": "k2", "value": {"a": {"b": {"c": {"d": {"e": 1}}}}}})

    assert within.status_code == 200, within.content
    assert beyond.status_code == 400
    assert error_code(beyond) == "VALIDATION_ERROR"
    assert beyond.json()["error"]["details"]["maxDepth"] == 5


@pytest.mark.parametrize(
    "raw",
    [
        '{"key": "k", "value": "broken \\ud800 text"}',
        '{"key": "k", "value": {"note": "\\udfff"}}',
        '{"key": "k", "value": 1, "meta": {"\\ud83d": "x"}}',
        '{"key": "k\\udc00", "value": 1}',
    ],
)
def test_a_lone_surrogate_anywhere_in_a_body_is_a_validation_error(api: Api, owner: Persona, raw: str) -> None:
    response = api.post("/memory/save", owner, raw=raw)

    assert response.status_code == 400, response.content
    assert error_code(response) == "VALIDATION_ERROR"
    assert not Claim.objects.exists()


def test_a_surrogate_pair_is_ordinary_text(api: Api, owner: Persona) -> None:
    response = api.post("/memory/save", owner, raw='{"key": "k", "value": "smile \\ud83d\\ude00"}')

    assert response.status_code == 200, response.content
    assert Claim.objects.get().value == "smile \U0001f600"


@pytest.mark.parametrize("digest", ["%00", "abc", "g" * 64, "a" * 63 + "%00", "a" * 65])
def test_a_malformed_digest_is_refused_before_any_lookup(api: Api, owner: Persona, digest: str) -> None:
    response = api.client.get(f"/artifact/{digest}", headers=owner.headers)

    assert response.status_code == 400, response.content
    assert error_code(response) == "VALIDATION_ERROR"
    assert "sha256" in response.json()["error"]["details"]


def conversation(timestamp: str) -> dict[str, object]:
    return {"conversation": {"id": "far", "messages": [
        {"id": "m1", "role": "user", "content": "I will send the report tomorrow.", "timestamp": timestamp},
    ]}}  # fmt: skip


@pytest.mark.parametrize("timestamp", ["9999-12-31T10:00:00Z", "0001-01-01T00:00:00Z", "1899-12-31T23:00:00Z"])
def test_an_implausible_message_time_is_refused_at_the_door(api: Api, owner: Persona, timestamp: str) -> None:
    response = api.post("/ingest/conversation", owner, conversation(timestamp))

    assert response.status_code == 400, response.content
    assert error_code(response) == "VALIDATION_ERROR"
    assert "conversation" in response.json()["error"]["details"]
    assert not Source.objects.exists()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/ingest/document", {"document": {"id": "d", "content": "x", "timestamp": "9999-01-01T00:00:00Z"}}),
        ("/ingest/document", {"document": {"id": "d", "content": "x", "authoredAt": "1000-01-01T00:00:00Z"}}),
        ("/ingest/transcript", {"transcript": {"id": "t", "content": "A: hi", "timestamp": "9999-01-01T00:00:00Z"}}),
        ("/query/recent-changes", {"since": "0001-01-01T00:00:00Z"}),
        ("/source/list", {"since": "9999-12-31T00:00:00Z"}),
    ],
)
def test_implausible_times_are_refused_on_every_endpoint(api: Api, owner: Persona, path: str, body: dict) -> None:
    response = api.post(path, owner, body)

    assert response.status_code == 400, response.content
    assert error_code(response) == "VALIDATION_ERROR"


def test_the_last_plausible_day_is_extracted_without_overflow(api: Api, owner: Persona) -> None:
    receipt = api.post("/ingest/conversation", owner, conversation("2999-12-31T10:00:00Z")).json()
    run_operation(receipt["operationId"])

    operation = api.post("/source/processing/get", owner, {"operationId": receipt["operationId"]}).json()
    assert operation["status"] == "completed", operation


@pytest.mark.parametrize("phrase", ["tomorrow", "next week", "friday", "end of the week", "3 january"])
def test_day_phrases_at_the_end_of_the_calendar_never_raise(phrase: str) -> None:
    assert resolve_day(phrase, date.max) in {date.max, None}


@pytest.mark.parametrize("depth", [1200, 100_000])
def test_a_deeply_nested_document_part_of_a_file_upload_is_a_validation_error(
    api: Api, owner: Persona, depth: int
) -> None:
    from tests.memory.test_files import upload

    document = '{"id": "deep", "sourceContext": {"note": ' + "[" * depth + "]" * depth + "}}"
    response = upload(api, owner, b"notes", document=document)
    assert response.status_code == 400, response.content
    assert error_code(response) == "VALIDATION_ERROR"
    assert response.json()["error"]["details"]["maxDepth"] == 64
    assert not Source.objects.exists()


def test_a_lone_surrogate_in_the_document_part_of_a_file_upload_is_a_validation_error(api: Api, owner: Persona) -> None:
    from tests.memory.test_files import upload

    response = upload(api, owner, b"notes", document='{"id": "odd", "sourceContext": {"note": "\\ud800"}}')
    assert response.status_code == 400, response.content
    assert error_code(response) == "VALIDATION_ERROR"
    assert not Source.objects.exists()

"""Bad requests of every kind answer in the one error shape, never a 500."""

from __future__ import annotations

import pytest
from django.test import override_settings

from memory.models import Partition, ToolEvent
from tests.conftest import Api, Persona, error_code

pytestmark = pytest.mark.django_db


def test_malformed_json_is_a_clear_error(api: Api, owner: Persona) -> None:
    response = api.post("/partitions/create", owner, raw="{not json")
    assert response.status_code == 400
    assert error_code(response) == "MALFORMED_JSON"


@pytest.mark.parametrize("body", ["[1, 2]", '"text"', "42", "null"])
def test_non_object_bodies_are_validation_errors(api: Api, owner: Persona, body: str) -> None:
    response = api.post("/partitions/create", owner, raw=body)
    assert response.status_code == 400
    assert error_code(response) in {"VALIDATION_ERROR", "MALFORMED_JSON"}


def test_unknown_fields_are_rejected_by_name(api: Api, owner: Persona) -> None:
    response = api.post("/partitions/create", owner, {"key": "project:a", "lable": "typo"})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert response.json()["error"]["details"] == {"lable": ["Unknown field."]}
    assert not Partition.objects.filter(key="project:a").exists()


def test_wrong_method_is_method_not_allowed(api: Api, owner: Persona) -> None:
    response = api.get("/partitions/list", owner)
    assert response.status_code == 405
    assert error_code(response) == "METHOD_NOT_ALLOWED"
    assert response.json()["error"]["details"]["allowed"] == ["POST"]


def test_wrong_content_type_is_unsupported_media_type(api: Api, owner: Persona) -> None:
    response = api.post("/partitions/list", owner, raw="key=x", content_type="text/plain")
    assert response.status_code == 415
    assert error_code(response) == "UNSUPPORTED_MEDIA_TYPE"


@override_settings(MAX_JSON_BODY_BYTES=1024)
def test_oversize_body_is_payload_too_large(api: Api, owner: Persona) -> None:
    response = api.post("/partitions/create", owner, {"key": "project:a", "label": "x" * 2000})
    assert response.status_code == 413
    assert error_code(response) == "PAYLOAD_TOO_LARGE"
    assert response.json()["error"]["details"] == {"maxBytes": 1024}
    assert not Partition.objects.filter(key="project:a").exists()


def test_unknown_path_is_not_found_in_the_error_shape(api: Api, owner: Persona) -> None:
    response = api.post("/no/such/endpoint", owner)
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"


def test_failed_calls_are_recorded_without_content(api: Api, owner: Persona) -> None:
    api.post("/partitions/create", owner, {"key": "Bad Key", "label": "secret label"})
    event = ToolEvent.objects.get(tool="partitions.create")
    assert (event.status_code, event.outcome, event.error_code) == (400, "client_error", "VALIDATION_ERROR")
    assert event.request_bytes > 0
    stored = " ".join(str(value) for value in vars(event).values())
    assert "secret label" not in stored

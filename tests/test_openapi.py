"""The OpenAPI document is valid and the docs page renders from vendored assets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import resolve
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db


def test_schema_is_a_valid_openapi_document(client: Client) -> None:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert {"/whoami", "/partitions/list", "/partitions/create", "/partitions/deactivate"} <= set(schema["paths"])
    create = schema["paths"]["/partitions/create"]["post"]
    assert create["operationId"] == "partitions.create"
    assert "requestBody" in create
    assert create["security"] == [{"bearerToken": []}]
    assert schema["components"]["securitySchemes"]["bearerToken"]["scheme"] == "bearer"


def test_docs_page_uses_no_cdn(client: Client) -> None:
    page = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in page
    assert "cdn." not in page
    assert "jsdelivr" not in page


def _schema(client: Client) -> dict[str, Any]:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return cast(dict[str, Any], response.json())


def _operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def test_the_schema_generates_without_warnings(tmp_path: Path) -> None:
    """A warning is how drf-spectacular reports a component name two serializers share (one of them then
    documents the other's fields) and every answer it could not describe."""
    call_command("spectacular", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))


def test_every_operation_documents_its_success_body(client: Client) -> None:
    lacking = []
    for path, method, operation in _operations(_schema(client)):
        successes = {code: answer for code, answer in operation["responses"].items() if code.startswith("2")}
        if not successes or not all("content" in answer for answer in successes.values()):
            lacking.append(f"{method.upper()} {path}")
    assert lacking == []


def test_every_operation_documents_its_errors_in_the_one_error_shape(client: Client) -> None:
    schema = _schema(client)
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    body = schema["components"]["schemas"][error["properties"]["error"]["$ref"].rsplit("/", 1)[1]]
    assert set(body["required"]) == {"code", "message", "remedy", "details"}
    for path, method, operation in _operations(schema):
        failures = {code: answer for code, answer in operation["responses"].items() if code[0] in "45"}
        assert {"400", "401", "404", "429", "500"} <= set(failures), f"{method} {path}"
        for code, answer in failures.items():
            ref = answer["content"]["application/json"]["schema"]["$ref"]
            assert ref == "#/components/schemas/Error", f"{method} {path} {code}"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/ingest/conversation", "202"),
        ("/ingest/document", "202"),
        ("/ingest/transcript", "202"),
        ("/ingest/file", "202"),
        ("/source/processing/retry", "202"),
        ("/partitions/create", "201"),
        ("/session/create", "201"),
        ("/metrics/observations", "201"),
        ("/whoami", "200"),
    ],
)
def test_success_codes_are_the_ones_the_endpoint_answers(client: Client, path: str, code: str) -> None:
    responses = _schema(client)["paths"][path]["post"]["responses"]
    assert [status for status in responses if status.startswith("2")] == [code]


def test_artifact_put_documents_stored_and_deduplicated(client: Client) -> None:
    responses = _schema(client)["paths"]["/artifact"]["put"]["responses"]
    assert {"200", "201"} <= set(responses)


@pytest.mark.parametrize(
    ("path", "fields"),
    [
        ("/memory/list", {"kind", "prefix", "includeQuarantined", "limit"}),
        ("/memory/search", {"query", "includeQuarantined", "limit"}),
        ("/session/list", {"limit"}),
        ("/handoff/list", {"limit"}),
        ("/commitments/list", {"provenance"}),
        ("/query/search", {"query", "excludeNodeTypes", "conversationId"}),
        ("/query/reference", {"query"}),
    ],
)
def test_each_path_documents_its_own_request_fields(client: Client, path: str, fields: set[str]) -> None:
    schema = _schema(client)
    ref = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    documented = set(schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"])
    view = resolve(path).func.view_class  # type: ignore[attr-defined]
    assert fields <= documented
    assert documented == set(view.request_serializer().fields)

"""The OpenAPI document is valid and the docs page renders from vendored assets."""

from __future__ import annotations

import pytest
from django.test import Client
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

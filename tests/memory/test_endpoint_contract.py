"""Every REST endpoint, found from the URL configuration, honours the access and error contract.

New endpoints are covered the moment they are routed: each persona and each kind of malformed input is
tried against all of them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import get_resolver
from rest_framework.parsers import MultiPartParser

from memory.api.base import Endpoint
from tests.conftest import Api, Persona, error_code

pytestmark = pytest.mark.django_db


def routed_endpoints() -> dict[str, type[Endpoint]]:
    found = {}
    for pattern in get_resolver().url_patterns:
        for inner in getattr(pattern, "url_patterns", [pattern]):
            view = getattr(getattr(inner, "callback", None), "view_class", None)
            if view is not None and issubclass(view, Endpoint):
                path = "/" + str(getattr(pattern, "pattern", "")) + str(inner.pattern)
                found[path.replace("//", "/")] = view
    return found


ENDPOINTS = routed_endpoints()
PATHS = sorted(ENDPOINTS)
JSON_PATHS = [
    path
    for path in PATHS
    if "post" in ENDPOINTS[path].http_method_names and MultiPartParser not in ENDPOINTS[path].parser_classes
]
SAMPLE_SHA = "0" * 64


def call(api: Api, path: str, persona: Persona | None, body: dict | None = None) -> Any:
    """Each endpoint with its own method: JSON POST, raw PUT, or GET with query parameters."""
    methods = ENDPOINTS[path].http_method_names
    headers = persona.headers if persona else {}
    if MultiPartParser in ENDPOINTS[path].parser_classes:
        fields = dict(body or {})
        parts = {"document": json.dumps(fields.pop("document", {"id": "notes.txt"}))}
        parts.update({key: json.dumps(value) if isinstance(value, bool) else value for key, value in fields.items()})
        upload = SimpleUploadedFile("notes.txt", b"Some notes.", content_type="text/plain")
        return api.client.post(path, data={**parts, "file": upload}, headers=headers)
    if "post" in methods:
        return api.post(path, persona, body)
    query = "&".join(f"{key}={value}" for key, value in (body or {}).items())
    url = path.replace("<str:sha256>", SAMPLE_SHA) + (f"?{query}" if query else "")
    if "put" in methods:
        return api.client.put(url, data=b"bytes", content_type="application/octet-stream", headers=headers)
    return api.client.get(url, headers=headers)


def test_the_endpoints_are_found() -> None:
    assert {"/whoami", "/partitions/list", "/partitions/create", "/partitions/deactivate"} <= set(PATHS)


@pytest.mark.parametrize("path", PATHS)
def test_anonymous_gets_auth_required(api: Api, path: str) -> None:
    response = call(api, path, None)
    assert response.status_code == 401
    assert error_code(response) == "AUTH_REQUIRED"


@pytest.mark.parametrize("path", PATHS)
def test_outsider_gets_token_invalid(api: Api, outsider: Persona, path: str) -> None:
    assert error_code(call(api, path, outsider)) == "TOKEN_INVALID"


@pytest.mark.parametrize("path", PATHS)
def test_revoked_token_gets_token_revoked(api: Api, revoked: Persona, path: str) -> None:
    assert error_code(call(api, path, revoked)) == "TOKEN_REVOKED"


@pytest.mark.parametrize("path", PATHS)
def test_other_user_naming_the_owner_gets_not_found(api: Api, other: Persona, alice, path: str) -> None:
    response = call(api, path, other, {**ENDPOINTS[path].example_request, "userId": "alice"})
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"


@pytest.mark.parametrize("path", PATHS)
def test_unknown_fields_are_validation_errors(api: Api, owner: Persona, path: str) -> None:
    response = call(api, path, owner, {**ENDPOINTS[path].example_request, "noSuchOption": True})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert "noSuchOption" in response.json()["error"]["details"]


@pytest.mark.parametrize("path", JSON_PATHS)
def test_malformed_json_is_rejected(api: Api, owner: Persona, path: str) -> None:
    response = api.post(path, owner, raw='{"userId": ')
    assert response.status_code == 400
    assert error_code(response) == "MALFORMED_JSON"


@pytest.mark.parametrize("path", JSON_PATHS)
def test_get_is_method_not_allowed(api: Api, owner: Persona, path: str) -> None:
    assert error_code(api.get(path, owner)) == "METHOD_NOT_ALLOWED"


@pytest.mark.parametrize("path", JSON_PATHS)
def test_unknown_access_scope_header_is_a_validation_error(api: Api, owner: Persona, path: str) -> None:
    response = api.post(path, owner, ENDPOINTS[path].example_request, headers={"X-Memory-Access-Scope": "everything"})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"

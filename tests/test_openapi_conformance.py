"""The OpenAPI document is true: schemathesis sends a few generated requests to every operation of a live
server (uvicorn on a loopback port, the test database) with an owner's token, and checks that every answer's
status code is documented, its body matches the documented schema and no call ends in a server error.

Bounded on purpose (a few examples per operation, no shrinking, no deadline): it guards the document, it is
not a fuzzing campaign. Destructive calls are part of it: they act on generated ids and keys that do not
exist, or on the rows earlier examples of the same operation made; each operation starts from an empty
database.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import schemathesis
from django.conf import settings
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import Persona
from tests.mcp.conftest import McpService
from tests.process import child_env, free_port

pytestmark = pytest.mark.server

EXAMPLES_PER_OPERATION = 3
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def api_server(django_db_setup: None, django_db_blocker: Any) -> Iterator[McpService]:
    env = child_env(settings.DATABASES["default"]["NAME"], RATE_LIMIT_PER_MINUTE="1000000")
    env.pop("GITHUB_TOKEN", None)  # coord/reconcile must not reach a real resolver
    env["EXTRACTOR"] = "rules"
    service = McpService(port=free_port(), env=env, log=Path(settings.DATA_DIR) / "conformance-server.log")
    service.start()
    try:
        yield service
    finally:
        service.stop()
        from config.celery import app

        app.control.purge()  # the jobs ingestion queued: no worker ran them, their rows are gone, and a
        # real worker started by a later test must not meet them


def _document() -> dict[str, Any]:
    """The document /api/schema/ serves, built in this process (the same generator and renderer), so the
    operations are known when pytest collects them. (schemathesis' lazy `from_fixture` loader does not run
    on pytest 9.)"""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    document = SchemaGenerator().get_schema(request=None, public=True)
    return cast(dict[str, Any], json.loads(OpenApiJsonRenderer().render(document)))


schema = schemathesis.openapi.from_dict(_document())


@schema.parametrize()
@hypothesis_settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure is reported as found
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_every_answer_matches_the_document(
    case: Any, api_server: McpService, transactional_db: None, owner: Persona
) -> None:
    """`transactional_db`: the server is another process, so the owner's token must be committed. The checks
    raise on any answer the document does not describe; the status is asserted here as well."""
    response = case.call_and_validate(base_url=api_server.url, headers=owner.headers, checks=CHECKS, timeout=60)
    assert response.status_code < 500 or response.status_code == 503, response.text[:500]

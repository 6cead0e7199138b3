"""Transport-level refusals of /mcp (wrong content type, a body past the cap, a client that accepts no JSON)
answer in the one error shape, like every other error."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import Persona, error_code
from tests.mcp.conftest import BODY_CAP, McpService, headers_of

pytestmark = pytest.mark.server

MESSAGE = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}'


def test_a_body_that_is_not_json_is_refused_in_the_error_shape(mcp_service: McpService, mcp_owner: Persona) -> None:
    response = httpx.post(
        f"{mcp_service.url}/mcp", content=MESSAGE, headers=headers_of(mcp_owner, **{"Content-Type": "text/plain"})
    )
    assert response.status_code == 415
    assert error_code(response) == "UNSUPPORTED_MEDIA_TYPE"


def test_a_client_that_accepts_no_json_is_refused_in_the_error_shape(
    mcp_service: McpService, mcp_owner: Persona
) -> None:
    response = httpx.post(f"{mcp_service.url}/mcp", content=MESSAGE, headers=headers_of(mcp_owner, Accept="text/html"))
    assert response.status_code == 406
    assert error_code(response) == "NOT_ACCEPTABLE"


def test_a_body_past_the_cap_is_refused_declared_or_streamed(mcp_service: McpService, mcp_owner: Persona) -> None:
    cap = BODY_CAP
    padding = b" " * (cap + 1 - len(MESSAGE))
    declared = httpx.post(f"{mcp_service.url}/mcp", content=MESSAGE + padding, headers=headers_of(mcp_owner))
    assert declared.status_code == 413
    assert error_code(declared) == "PAYLOAD_TOO_LARGE"
    assert declared.json()["error"]["details"] == {"maxBytes": cap}

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server must count as it reads
        yield MESSAGE
        for start in range(0, len(padding), 65536):
            yield padding[start : start + 65536]

    streamed = httpx.post(f"{mcp_service.url}/mcp", content=chunks(), headers=headers_of(mcp_owner))
    assert streamed.status_code == 413
    assert error_code(streamed) == "PAYLOAD_TOO_LARGE"
    # A body just under the cap is served.
    fits = httpx.post(f"{mcp_service.url}/mcp", content=MESSAGE + padding[:-1], headers=headers_of(mcp_owner))
    assert fits.status_code == 200, fits.text

"""The API docs page renders the OpenAPI document in a real browser, from vendored assets only."""

from __future__ import annotations

import pytest

from tests.web.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_render_every_endpoint(page, live_server) -> None:
    external: list[str] = []
    page.on("request", lambda request: external.append(request.url) if live_server.url not in request.url else None)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock-summary-path", timeout=15000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert {"/whoami", "/partitions/create"} <= {path.strip().replace("\u200b", "") for path in paths}
    assert [url for url in external if not url.startswith("data:")] == []
    screenshot(page, "api-docs")

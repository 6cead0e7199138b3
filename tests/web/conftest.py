"""Headless Chromium (Debian's package) driven by Playwright, against the live test server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process import AsgiService

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts"

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make around it are
# ordinary synchronous calls, so Django's async-safety guard would be a false alarm here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make system-deps` (Debian package 'chromium').")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )  # fmt: skip
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    yield page
    context.close()


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


PASSWORD = "correct horse battery staple"  # tests.factories.UserFactory's password


def sign_in_as(page, live_server, user) -> None:
    """A signed-in browser session for `user`, without typing: Django's test client logs in and the session
    cookie is handed to the browser (the login form itself is tested in test_home)."""
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": live_server.url}])


def screenshots(page, name: str) -> None:
    """The page at 1280 and at 390 px wide (test artifacts, not committed); at 390 nothing may be wider than
    the screen (no horizontal scrolling)."""
    page.set_viewport_size({"width": 1280, "height": 800})
    screenshot(page, f"{name}-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    screenshot(page, f"{name}-390")
    page.set_viewport_size({"width": 1280, "height": 800})
    assert overflow <= 0, f"{name} scrolls sideways at 390 px by {overflow} px"


def post_without_csrf(user, path: str, data: dict[str, str] | None = None) -> int:
    """The status of a form POST that carries the session but no CSRF token (it must be refused)."""
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return int(client.post(path, data or {}).status_code)


@pytest.fixture(scope="session")
def asgi_server(django_db_setup: None, django_db_blocker: object) -> Iterator[AsgiService]:
    """One ASGI server for the session (the live pages need it: pytest-django's live_server speaks WSGI only, so
    it has no websockets). Tests using it need `transactional_db` (it is another process), and
    sign the browser in with `sign_in_as(page, asgi_server, user)`: the session is stored in the shared
    database (SESSION_ENGINE is the database backend), so the cookie is valid there too."""
    from django.conf import settings

    from tests.process import child_env, free_port

    env = child_env(settings.DATABASES["default"]["NAME"], RATE_LIMIT_PER_MINUTE="100000")
    server = AsgiService(free_port(), env, Path(settings.DATA_DIR) / "web-asgi-server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()

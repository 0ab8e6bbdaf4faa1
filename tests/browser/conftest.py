"""Real-browser fixtures: the system Chromium driven by Playwright against live_server.

Playwright cannot download browsers here, so it launches /usr/bin/chromium (override with
KEEPERSTATE_CHROMIUM). A missing Chromium fails the suite: these tests must run in CI.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The sync Playwright API runs an event loop in the test thread; Django's ORM refuses to run
# inside one unless told that this (single-threaded test) use is safe.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = Path(os.environ.get("KEEPERSTATE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail(f"Chromium is not installed at {CHROMIUM}; install it (apt-get install -y chromium).")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Every page runs under the site's Content-Security-Policy: Chromium reports what it refused
    # on the console, and a refusal is a broken feature (an inline script or handler).
    violations: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    yield page
    context.close()
    assert errors == [], f"JavaScript errors in the page: {errors}"
    assert violations == [], f"CSP violations in the page: {violations}"


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def log_in(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/builder/")


@pytest.fixture
def author_page(page, user):
    """A browser page logged in as alice (member of acme)."""
    log_in(page, "alice", "pw-alice")
    return page

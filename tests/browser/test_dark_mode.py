"""Dark mode: every page follows the system's colour scheme, the top bar's toggle overrides it
(remembered by this browser), and axe-core finds no serious or critical violation on any page in
either scheme: the login, the workflow list, the editor (a node's form with its run data and pinned
data, the Runs tab with its charts, the State panel, the Settings dialog), versions, secrets,
tokens, an error page and Django admin."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from keeperstate.executions.service import run_workflow
from tests.browser.axe import axe_violations
from tests.browser.conftest import log_in
from tests.browser.helpers import open_editor, select_node

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCHEMES = ["light", "dark"]
BACKGROUND = "() => getComputedStyle(document.body).backgroundColor"


def luminance(rgb: str) -> float:
    red, green, blue = (int(part) for part in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


@pytest.fixture
def scheme_page(browser, live_server):
    """A page in a given system scheme, bypassing the CSP only to inject axe-core."""
    contexts = []

    def make(scheme):
        context = browser.new_context(base_url=live_server.url, viewport={"width": 1440, "height": 900},
                                      color_scheme=scheme, bypass_csp=True)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        return page

    yield make
    for context in contexts:
        context.close()


def test_a_page_follows_the_system_scheme_and_the_toggle_overrides_it(scheme_page, user, artifacts):
    page = scheme_page("dark")
    log_in(page, "alice", "pw-alice")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert luminance(page.evaluate(BACKGROUND)) < 0.2
    toggle = page.locator("#theme-toggle")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    page.screenshot(path=str(artifacts / "dark-mode-workflow-list.png"))

    toggle.click()
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    assert luminance(page.evaluate(BACKGROUND)) > 0.8
    page.reload()  # remembered
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    toggle = page.locator("#theme-toggle")
    toggle.click()  # back to the system's: the choice is forgotten
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert page.evaluate("localStorage.getItem('keeperstate.theme')") is None

    light = scheme_page("light")
    log_in(light, "alice", "pw-alice")
    expect(light.locator("html")).to_have_attribute("data-theme", "light")


@pytest.fixture
def everything(monitor, user):
    """The monitor after a run (runs, state, a chart); alice; a superuser for admin."""
    run_workflow(monitor, {"block": 100})
    run_workflow(monitor, {"block": 101})
    get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    return monitor


def checked(page, where, found):
    violations = axe_violations(page)
    if violations:
        found.append((where, violations))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_page_has_no_serious_violation_in_either_scheme(scheme_page, everything, scheme, artifacts):
    found: list = []
    page = scheme_page(scheme)
    page.goto("/accounts/login/")
    checked(page, "login", found)
    log_in(page, "alice", "pw-alice")
    checked(page, "workflow list", found)

    open_editor(page, everything.id)
    checked(page, "editor", found)
    select_node(page, "state-get-1")
    page.locator("#btn-pin-run").click()
    expect(page.locator('#inspector .run-data details.tree-node, #inspector .run-data .tree-row').first).to_be_visible()
    checked(page, "editor: a node's form, run data and pinned data", found)
    page.screenshot(path=str(artifacts / f"editor-{scheme}.png"))
    page.locator("#inspector .run-data").get_by_role("button", name="Schema").click()
    checked(page, "editor: run data as a schema", found)
    page.locator("#tab-runs").click()
    page.wait_for_selector("#runs-charts[data-ready]")
    checked(page, "editor: runs and charts", found)
    page.locator("#tab-state").click()
    expect(page.locator("#state-gauges .gauge")).to_have_count(3)
    checked(page, "editor: state panel", found)
    page.locator("#btn-settings").click()
    expect(page.locator("#settings-error-workflow")).to_be_enabled()
    checked(page, "editor: settings dialog", found)
    page.screenshot(path=str(artifacts / f"editor-settings-{scheme}.png"))
    page.keyboard.press("Escape")

    for path, name in ((f"/builder/workflows/{everything.id}/versions/", "versions"), ("/builder/secrets/", "secrets"),
                       ("/builder/tokens/", "tokens"), ("/no-such-page/", "404")):
        page.goto(path)
        page.wait_for_load_state("networkidle")
        checked(page, name, found)

    admin = scheme_page(scheme)
    admin.goto("/admin/login/")
    admin.get_by_label("Username").fill("root")
    admin.get_by_label("Password").fill("pw-root")
    admin.get_by_role("button", name="Log in").click()
    admin.wait_for_url("**/admin/")
    checked(admin, "admin index", found)
    admin.goto("/admin/keeperstate/workflowstate/")
    checked(admin, "admin state list", found)

    assert found == [], "\n".join(f"{where}: {v['id']} ({v['impact']}) {v['nodes']}" for where, vs in found for v in vs)

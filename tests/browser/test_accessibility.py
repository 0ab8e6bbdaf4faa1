"""Accessibility: axe-core finds no serious or critical violation on the login, list and editor
pages; the editor is operable from the keyboard with a visible focus ring; cards and edges have
accessible names."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.executions.service import run_workflow
from tests.browser.axe import axe_violations
from tests.browser.conftest import log_in
from tests.browser.helpers import card, open_editor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def a11y_page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1440, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def test_login_page_has_no_serious_violation(a11y_page):
    a11y_page.goto("/accounts/login/")

    assert axe_violations(a11y_page) == []


def test_workflow_list_has_no_serious_violation(a11y_page, user, monitor):
    run_workflow(monitor, {"block": 1})
    log_in(a11y_page, "alice", "pw-alice")

    assert axe_violations(a11y_page) == []


def test_editor_has_no_serious_violation(a11y_page, user, monitor):
    run_workflow(monitor, {"block": 1})
    log_in(a11y_page, "alice", "pw-alice")
    open_editor(a11y_page, monitor.id)
    assert axe_violations(a11y_page) == []

    # with a node's form open and the Runs tab shown
    card(a11y_page, "state-set-1").locator(".node-head").click()
    a11y_page.wait_for_selector('#inspector .node-panel[data-node-id="state-set-1"] .config-form')
    a11y_page.locator("#tab-runs").click()
    expect(a11y_page.locator("#runs-list .run-row")).to_have_count(1)
    assert axe_violations(a11y_page) == []


def test_cards_and_edges_have_accessible_names(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)

    expect(page.get_by_role("group", name="New block? (Condition)")).to_have_count(1)
    expect(page.get_by_role("button", name="Connection from New block? (true) to State Set")).to_have_count(1)


def test_the_editor_is_operable_from_the_keyboard_with_a_visible_focus_ring(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)

    # Tab reaches the canvas toolbar and the cards; the focused element draws an outline
    page.locator("#btn-fit").focus()
    page.keyboard.press("Tab")
    expect(page.locator("#btn-layout")).to_be_focused()
    outline = page.locator("#btn-layout").evaluate("b => getComputedStyle(b).outlineStyle")
    assert outline == "solid"
    page.keyboard.press("Enter")  # Auto-layout from the keyboard
    expect(page.locator("#status")).to_contain_text("Laid out")

    card(page, "condition-1").focus()
    assert card(page, "condition-1").evaluate("c => getComputedStyle(c).outlineStyle") == "solid"
    page.keyboard.press("Enter")
    expect(page.locator('#inspector .node-panel[data-node-id="condition-1"]')).to_be_visible()

    # an edge: focus, Enter selects it, Delete removes it, Ctrl+Z brings it back
    edge = page.locator('.edge[data-edge-id="e3"]')
    edge.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#btn-delete-edge")).to_be_visible()
    page.keyboard.press("Delete")
    expect(page.locator(".edge")).to_have_count(2)
    page.keyboard.press("Control+z")
    expect(page.locator(".edge")).to_have_count(3)

    # the canvas pans with the arrow keys
    before = card(page, "trigger").bounding_box()
    page.locator("#canvas").focus()
    page.keyboard.press("ArrowRight")
    after = card(page, "trigger").bounding_box()
    assert after["x"] < before["x"]

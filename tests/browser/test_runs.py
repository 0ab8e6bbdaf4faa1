"""Runs in the editor: the latest run is shown after a reload, the Runs tab lists recent runs and
opens any of them onto the canvas, marks dim once the graph changes, and Run always shows results."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.executions.service import run_workflow
from tests.browser.helpers import (
    card,
    field,
    has_class,
    open_editor,
    result_row,
    run,
    select_node,
    show_state,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reload_shows_the_last_run(author_page, monitor):
    run_workflow(monitor, {"block": 100})
    page = author_page

    open_editor(page, monitor.id)

    expect(page.locator("#run-status")).to_contain_text("Last run")
    expect(page.locator("#run-status")).to_contain_text("succeeded")
    expect(result_row(page, "state-set-1")).to_contain_text('"version": 1')
    expect(card(page, "state-set-1").locator(".node-result")).to_have_text("✓ ran")


def test_the_runs_tab_lists_runs_and_opens_an_older_one_on_the_canvas(author_page, monitor, artifacts):
    older = run_workflow(monitor, {"block": 100})  # writes the cursor
    newer = run_workflow(monitor, {"block": 100})  # same block: the write is skipped
    page = author_page
    open_editor(page, monitor.id)
    expect(card(page, "state-set-1").locator(".node-result")).to_have_text("skipped")

    page.locator("#tab-runs").click()
    rows = page.locator("#runs-list .run-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-execution-id", str(newer.id))
    expect(rows.nth(0)).to_have_attribute("aria-current", "true")
    expect(rows.nth(1).locator(".run-pill")).to_have_text("succeeded")
    expect(rows.nth(1).locator(".run-duration")).not_to_have_text("—")
    expect(page.locator("#runs-tab-count")).to_have_text("(2)")
    page.screenshot(path=str(artifacts / "editor-runs-tab.png"))

    rows.nth(1).click()

    expect(rows.nth(1)).to_have_attribute("aria-current", "true")
    expect(card(page, "state-set-1").locator(".node-result")).to_have_text("✓ ran")
    expect(page.locator("#status")).to_contain_text(f"run {str(older.id)[:8]}")
    page.screenshot(path=str(artifacts / "editor-older-run-on-canvas.png"))
    page.locator("#tab-results").click()
    expect(result_row(page, "state-set-1")).to_contain_text('"created": true')


def test_marks_dim_once_the_graph_changes(author_page, monitor):
    run_workflow(monitor, {"block": 100})
    page = author_page
    open_editor(page, monitor.id)
    expect(page.locator("#run-stale-note")).to_be_hidden()

    select_node(page, "state-get-1")
    field(page, "key").fill("height")

    expect(page.locator("#canvas")).to_have_class(has_class("run-stale"))
    expect(card(page, "state-set-1").locator(".node-result")).to_have_text("✓ ran (before your edits)")
    expect(page.locator("#run-stale-note")).to_be_visible()


def test_run_shows_its_results_even_with_the_state_tab_open(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    show_state(page)

    run(page, '{"block": 5}')

    expect(page.locator("#results-pane")).to_be_visible()
    expect(result_row(page, "state-set-1")).to_be_visible()
    expect(page.locator("#runs-tab-count")).to_have_text("(1)")

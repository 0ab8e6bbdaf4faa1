"""A new author builds the block monitor from an empty workflow, as DESIGN.md §8 promises:
palette, forms, @ references, connecting a Condition branch, save, reload, run twice."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.state.models import WorkflowState
from keeperstate.workflows.models import Workflow
from tests.browser.helpers import (
    add_from_palette,
    card,
    create_workflow,
    field,
    field_box,
    menu,
    open_editor,
    pick_reference,
    result_row,
    run,
    save,
    select_node,
    wait_for_editor,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CONDITION = (
    "not <<@state-get-1:State Get.exists>> or <<@trigger:Trigger.block>> > <<@state-get-1:State Get.value>>"
)
EXPECTED_VERSION = "<<@state-get-1:State Get.version>>"


def test_author_builds_saves_and_runs_the_block_monitor(author_page, artifacts):
    page = author_page

    # given an empty workflow (it starts with a Manual trigger)
    create_workflow(page, "Block monitor")
    expect(page.locator(".node")).to_have_count(1)
    expect(page.locator("#inspector .guide")).to_contain_text("Build a workflow")
    page.screenshot(path=str(artifacts / "editor-new-workflow.png"))
    page.locator("#palette-group-system").screenshot(path=str(artifacts / "palette-system.png"))

    # the trigger's sample input makes its fields pickable
    select_node(page, "trigger")
    field(page, "sampleInput").fill('{"block": 100}')

    # State Get after the trigger, reading the cursor
    add_from_palette(page, "State Get", "state-get-1")
    field(page, "key").fill("cursor")
    field(page, "key").blur()
    page.locator("#inspector").screenshot(path=str(artifacts / "state-get-form.png"))

    # Condition after State Get, written with the @ menu (filtered, keyboard-driven)
    add_from_palette(page, "Condition", "condition-1")
    page.locator("#node-label").fill("New block?")
    condition = field(page, "condition")
    condition.click()
    condition.press_sequentially("not ")
    pick_reference(page, condition, "exists", "<<@state-get-1:State Get.exists>>")
    condition.press_sequentially(" or ")
    pick_reference(page, condition, "block", "<<@trigger:Trigger.block>>")
    condition.press_sequentially(" > @")
    expect(menu(page).locator(".ref-option").first).to_be_visible()
    condition.press_sequentially("state get val")
    expect(menu(page).locator(".ref-option")).to_have_count(1)
    condition.press("Enter")
    expect(condition).to_have_value(CONDITION)
    expect(field_box(page, "condition").locator(".ref-badge")).to_have_count(3)

    # State Set after the Condition: on its true branch by default
    add_from_palette(page, "State Set", "state-set-1")
    expect(page.locator(".edge")).to_have_count(3)
    expect(page.locator(".edge-label.true")).to_have_count(1)

    field(page, "key").fill("cursor")
    value = field(page, "value")
    value.click()
    pick_reference(page, value, "block", "<<@trigger:Trigger.block>>")
    page.get_by_text("Advanced").click()
    expected_version = field(page, "expectedVersion")
    expected_version.click()
    expected_version.press_sequentially("@")
    expect(menu(page).locator(".ref-group").first).to_be_visible()
    page.screenshot(path=str(artifacts / "autocomplete-menu.png"))
    # Escape closes the menu and keeps the text; Backspace and a fresh @ reopen it
    expected_version.press("Escape")
    expect(menu(page)).to_be_hidden()
    expect(expected_version).to_have_value("@")
    expected_version.press("Backspace")
    pick_reference(page, expected_version, "vers", EXPECTED_VERSION)
    expect(expected_version).to_have_value(EXPECTED_VERSION)
    badge = field_box(page, "expectedVersion").locator(".ref-badge")
    expect(badge).to_contain_text("State Get")
    expect(badge).to_contain_text("version")
    field(page, "ttl").fill("3600")
    field(page, "ttl").blur()
    expect(field_box(page, "ttl").locator(".field-errors li")).to_have_count(0)
    page.locator("#inspector").screenshot(path=str(artifacts / "state-set-form.png"))

    # when it is saved and the page reloaded
    save(page)
    workflow = Workflow.objects.get(name="Block monitor")
    saved = {n["id"]: n["data"]["config"] for n in workflow.nodes}
    assert saved["state-set-1"]["expectedVersion"] == EXPECTED_VERSION
    assert saved["state-set-1"]["ttl"] == 3600
    assert saved["condition-1"]["condition"] == CONDITION
    page.reload()
    wait_for_editor(page)

    # then the reference is intact
    select_node(page, "state-set-1")
    expect(field(page, "expectedVersion")).to_have_value(EXPECTED_VERSION)
    expect(field(page, "expectedVersion")).to_be_visible()  # Advanced opens when it holds a value
    expect(field_box(page, "expectedVersion").locator(".ref-badge.missing")).to_have_count(0)

    # and two runs move the cursor from 100 to 101
    run(page, '{"block": 100}')
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    expect(result_row(page, "state-set-1")).to_contain_text('"version": 1')
    expect(result_row(page, "state-set-1")).to_contain_text('"created": true')
    run(page, '{"block": 101}')
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    expect(result_row(page, "state-get-1")).to_contain_text('"value": 100')
    expect(result_row(page, "state-set-1")).to_contain_text('"version": 2')
    expect(card(page, "state-set-1")).to_contain_text("ran")
    page.screenshot(path=str(artifacts / "editor-after-runs.png"))
    cursor = WorkflowState.objects.get(workflow=workflow, key="cursor")
    assert (cursor.value, cursor.version) == (101, 2)


def test_repeated_block_skips_the_write_branch(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    run(page, '{"block": 7}')
    run(page, '{"block": 7}')

    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    expect(result_row(page, "condition-1")).to_contain_text('"result": false')
    expect(result_row(page, "state-set-1")).to_contain_text("skipped")

"""Editor behaviours a user meets beyond the happy path: field errors, Validate findings at
the node and field, deleted nodes in badges, run failures, mouse and arrow keys in the @ menu."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import (
    card,
    field,
    field_box,
    has_class,
    menu,
    open_editor,
    result_row,
    run,
    select_node,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_is_required_for_the_editor(page, monitor):
    page.goto(f"/builder/workflows/{monitor.id}/")

    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    assert "/accounts/login/" in page.url


def test_another_organizations_workflow_is_not_found(author_page, foreign_workflow):
    response = author_page.goto(f"/builder/workflows/{foreign_workflow.id}/")

    assert response.status == 404


def test_a_bad_ttl_shows_a_field_error_and_validate_marks_node_and_field(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-set-1")

    # a TTL that is not a whole number is refused as soon as the field is left
    field(page, "ttl").fill("12abc")
    field(page, "ttl").blur()
    expect(field_box(page, "ttl").locator(".field-errors")).to_contain_text("TTL must be a whole number")
    expect(field(page, "ttl")).to_have_value("12abc")

    # Validate lists it, marks the node, and keeps the error at the field
    field(page, "key").fill("")
    page.locator("#btn-validate").click()
    expect(page.locator("#status")).to_contain_text("2 errors")
    problems = page.locator("#problems-list")
    expect(problems).to_contain_text("Key is required")
    expect(problems).to_contain_text("TTL must be a whole number")
    expect(card(page, "state-set-1")).to_have_class(has_class("has-error"))
    expect(card(page, "state-set-1").locator(".node-problems")).to_have_text("2 problems")
    expect(field_box(page, "key").locator(".field-errors")).to_contain_text("Key is required")

    # Save refuses the same graph
    page.locator("#btn-save").click()
    expect(page.locator("#status")).to_contain_text("Not saved")
    monitor.refresh_from_db()
    assert "ttl" not in monitor.nodes[3]["data"]["config"]


def test_deleting_a_node_marks_the_references_to_it(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-get-1")
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))

    page.locator("#btn-delete-node").click()

    # the editor asked first, naming the nodes that reference it
    expect(card(page, "state-get-1")).to_have_count(0)
    assert "referenced by" in asked[0]
    assert "New block?, State Set" in asked[0]
    select_node(page, "state-set-1")
    missing = field_box(page, "expectedVersion").locator(".ref-badge.missing")
    expect(missing).to_contain_text("node deleted")
    expect(field(page, "expectedVersion")).to_have_value("<<@state-get-1:State Get.version>>")
    page.locator("#btn-validate").click()
    expect(page.locator("#problems-list")).to_contain_text("REFERENCE_MISSING_NODE")


def test_renaming_a_node_updates_its_badges(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-get-1")
    page.locator("#node-label").fill("Read cursor")

    select_node(page, "state-set-1")

    badge = field_box(page, "expectedVersion").locator(".ref-badge")
    expect(badge).to_contain_text("Read cursor")
    expect(field(page, "expectedVersion")).to_have_value("<<@state-get-1:State Get.version>>")


def test_run_shows_a_version_conflict_and_an_unresolved_reference(author_page, monitor):
    nodes = monitor.nodes
    nodes[3]["data"]["config"]["expectedVersion"] = 5
    monitor.nodes = nodes
    monitor.save()
    page = author_page
    open_editor(page, monitor.id)

    run(page, '{"block": 100}')
    expect(page.locator("#run-status")).to_contain_text("Run failed")
    conflict = result_row(page, "state-set-1")
    expect(conflict).to_contain_text("STATE_VERSION_CONFLICT")
    expect(conflict).to_contain_text('"expected": 5')
    expect(card(page, "state-set-1")).to_contain_text("STATE_VERSION_CONFLICT")

    run(page, '{"height": 100}')
    unresolved = result_row(page, "condition-1")
    expect(unresolved).to_contain_text("TEMPLATE_UNRESOLVED")
    expect(unresolved).to_contain_text("<<@trigger:Trigger.block>>")
    expect(result_row(page, "state-set-1")).to_contain_text("did not run")


def test_an_input_that_is_not_json_is_refused_before_running(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)

    page.locator("#run-input").fill("{block: 1}")
    page.locator("#btn-run").click()

    expect(page.locator("#run-status")).to_contain_text("not valid JSON")
    assert monitor.executions.count() == 0


def test_the_run_status_names_an_execution_only_while_it_shows_one(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    run(page, '{"block": 1}')
    status = page.locator("#run-status")
    expect(status).to_have_attribute("data-execution-id", str(monitor.executions.get().id))

    page.locator("#run-input").fill("{block: 2}")
    page.locator("#btn-run").click()

    expect(status).to_contain_text("not valid JSON")
    expect(status).not_to_have_attribute("data-execution-id", re.compile("."))


def test_the_menu_follows_arrow_keys_and_the_mouse(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-set-1")
    key = field(page, "key")
    key.fill("")
    key.press_sequentially("@")
    options = menu(page).locator(".ref-option")
    expect(options.first).to_have_class(has_class("active"))
    count = options.count()
    assert count == 1 + 4 + 1 + 4  # result; value, exists, version, expiresAt; block; 4 built-ins
    assert "data" not in [o.inner_text().split("\n")[0] for o in options.all()]

    key.press("ArrowUp")  # wraps to the last option
    expect(options.nth(count - 1)).to_have_class(has_class("active"))
    key.press("ArrowDown")
    key.press("ArrowDown")
    expect(options.nth(1)).to_have_class(has_class("active"))
    key.press("Enter")
    expect(key).to_have_value("<<@state-get-1:State Get.value>>")

    key.press_sequentially("-@iso")
    menu(page).locator('.ref-option[data-token="<<@__system:System.isoTimestamp>>"]').click()
    expect(key).to_have_value("<<@state-get-1:State Get.value>>-<<@__system:System.isoTimestamp>>")
    expect(field_box(page, "key").locator(".ref-badge")).to_have_count(2)


def test_deleting_a_connection_and_reconnecting_the_false_branch(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)

    page.locator('.edge[data-edge-id="e3"] .edge-hit').click(force=True)
    page.locator("#btn-delete-edge").click()
    expect(page.locator(".edge")).to_have_count(2)
    card(page, "condition-1").locator('.handle.out[data-handle="false"]').click()
    card(page, "state-set-1").locator(".node-head").click()

    expect(page.locator(".edge-label.false")).to_have_count(1)
    expect(page.locator("#dirty-indicator")).to_be_visible()


def test_nodes_can_be_selected_and_deleted_from_the_keyboard(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)

    card(page, "state-set-1").focus()
    page.keyboard.press("Enter")
    expect(page.locator('#inspector .node-panel[data-node-id="state-set-1"]')).to_be_visible()
    expect(card(page, "state-set-1")).to_be_focused()
    page.keyboard.press("Delete")

    expect(card(page, "state-set-1")).to_have_count(0)
    expect(page.locator(".edge")).to_have_count(2)
    expect(page.locator("#status")).to_contain_text("Deleted State Set")


def test_escape_closes_the_menu_and_a_new_at_sign_reopens_it(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-set-1")
    key = field(page, "key")
    key.fill("")

    key.press_sequentially("@")
    expect(menu(page)).to_be_visible()
    key.press("Escape")
    expect(menu(page)).to_be_hidden()
    key.press_sequentially("cur")  # still the dismissed @: the list stays closed
    expect(menu(page)).to_be_hidden()

    key.press_sequentially(" @")

    expect(menu(page)).to_be_visible()
    expect(menu(page).locator(".ref-option").first).to_be_visible()


def test_placeholders_read_as_examples_and_errors_do_not_repeat_the_help(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-get-1")

    expect(field(page, "key")).to_have_attribute("placeholder", "e.g. cursor")
    field(page, "key").fill("")
    field(page, "key").blur()

    errors = field_box(page, "key").locator(".field-errors")
    expect(errors).to_have_text("Key is required: enter a value or pick one with @.")
    help_text = field_box(page, "key").locator(".help").text_content()
    assert help_text
    assert help_text not in (errors.text_content() or "")


def test_a_long_status_is_cut_and_whole_on_hover(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "condition-1")

    page.locator('.palette-entry[data-entry-id="State Get"]').click()

    status = page.locator("#status")
    expect(status).to_contain_text("For the false branch, delete the connection")
    assert status.get_attribute("title") == status.text_content()

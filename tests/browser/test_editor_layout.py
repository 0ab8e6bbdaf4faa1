"""The side column gives run results the room: the help folds (remembered across reloads); a
field's error shows when the author leaves the field."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import field, field_box, open_editor, select_node

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_help_is_folded_on_a_finished_workflow_and_remembered(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    guide = page.locator("#guide")

    # a workflow of four nodes: folded, so the run panel has the column
    expect(guide).not_to_have_attribute("open", "")
    inspector = page.locator("#inspector").bounding_box()
    panel = page.locator("#run-panel").bounding_box()
    assert inspector["height"] < 120
    assert panel["height"] > 600
    page.screenshot(path=str(artifacts / "editor-help-folded.png"))

    # opened, it stays open after a reload (this browser remembers)
    guide.locator("summary").click()
    expect(guide).to_have_attribute("open", "")
    open_editor(page, monitor.id)
    expect(page.locator("#guide")).to_have_attribute("open", "")
    page.locator("#guide summary").click()
    open_editor(page, monitor.id)
    expect(page.locator("#guide")).not_to_have_attribute("open", "")


def test_a_fields_error_shows_when_leaving_it(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-set-1")
    page.get_by_text("Advanced").click()

    field(page, "ttl").fill("-5")
    field(page, "ttl").blur()

    expect(field_box(page, "ttl").locator(".field-errors li")).to_have_count(1)
    expect(field_box(page, "ttl")).to_contain_text("1 or more")
    field_box(page, "ttl").screenshot(path=str(artifacts / "editor-field-error-on-leave.png"))


def test_a_conditions_card_wraps_its_test_over_four_lines(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    value = page.locator('.node[data-node-id="condition-1"] .summary-long .summary-value')

    expect(value).to_have_count(1)
    line_height = value.evaluate("v => parseFloat(getComputedStyle(v).lineHeight) || 16")
    assert value.bounding_box()["height"] > 2.5 * line_height * 0.8  # more than the two lines other fields get
    assert value.evaluate("v => getComputedStyle(v).webkitLineClamp") == "4"
    page.locator('.node[data-node-id="condition-1"]').screenshot(path=str(artifacts / "editor-condition-wraps.png"))

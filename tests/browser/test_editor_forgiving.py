"""The editor forgives: deleting a middle node offers to reconnect its neighbours (one undo step),
an action added after a Condition goes on its true branch, an unconnected node's @ list says why
it offers no node, and an @text that looks like a failed pick is flagged at its field."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import (
    accept_next_dialog,
    add_from_palette,
    card,
    field,
    field_box,
    menu,
    open_editor,
    select_node,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


EDGES = "gs => gs.map(g => [g.dataset.source, g.dataset.target, g.dataset.handle || null])"


def edge_pairs(page):
    """The connections drawn on the canvas: (source, target, branch)."""
    return sorted(tuple(e) for e in page.eval_on_selector_all("#edges .edge", EDGES))


def test_deleting_a_middle_node_reconnects_its_neighbours_in_one_undo_step(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "condition-1")  # State Get → New block? —true→ State Set; nothing references it
    before = edge_pairs(page)

    asked = accept_next_dialog(page)
    page.keyboard.press("Delete")

    expect(card(page, "condition-1")).to_have_count(0)
    assert "Reconnect them (State Get → State Set)" in asked[0]
    assert ("state-get-1", "state-set-1", None) in edge_pairs(page)
    expect(page.locator("#status")).to_contain_text("Its neighbours were reconnected")
    page.screenshot(path=str(artifacts / "editor-delete-reconnect.png"))

    page.locator("#btn-undo").click()  # one step brings back the node and the old edges
    expect(card(page, "condition-1")).to_have_count(1)
    assert edge_pairs(page) == before


def test_declining_the_reconnect_deletes_only(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "condition-1")
    page.once("dialog", lambda dialog: dialog.dismiss())

    page.keyboard.press("Delete")

    expect(card(page, "condition-1")).to_have_count(0)
    assert ("state-get-1", "state-set-1", None) not in edge_pairs(page)


def test_an_action_added_after_a_condition_goes_on_its_true_branch(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "condition-1")

    add_from_palette(page, "Set Fields", "set-fields-1")

    assert ("condition-1", "set-fields-1", "true") in edge_pairs(page)
    expect(page.locator("#status")).to_contain_text("after New block? (true)")


def test_an_unconnected_nodes_at_list_says_why_it_offers_no_node(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    page.locator("#canvas").click(position={"x": 5, "y": 5})  # nothing selected: added unconnected
    add_from_palette(page, "State Set", "state-set-2")

    field(page, "value").press_sequentially("@")

    note = menu(page).locator(".ref-why-empty")
    expect(note).to_contain_text("State Set 2 is not connected after another node yet")
    page.screenshot(path=str(artifacts / "editor-at-list-unconnected.png"))


def test_literal_at_text_that_looks_like_a_failed_pick_is_flagged(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-set-1")
    value = field(page, "value")
    value.fill("@body.block")
    page.keyboard.press("Escape")

    page.locator("#btn-validate").click()

    expect(field_box(page, "value")).to_contain_text("is sent as the text '@body.block'")

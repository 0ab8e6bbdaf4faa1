"""Connecting: the "Connecting from…" banner floats over the canvas (the card clicked next is where
it was), a handle dragged onto a card connects it, a handle dropped on empty canvas opens the list
of actions there and adds the chosen one connected; after a run each connection says how many
items passed it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.executions.service import run_workflow
from tests.browser.helpers import card, has_class, open_editor, wait_for_form
from tests.executions.graphs import trigger
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EDGES = "gs => gs.map(g => [g.dataset.source, g.dataset.target, g.dataset.handle || null])"


def edge_pairs(page):
    return sorted(tuple(e) for e in page.eval_on_selector_all("#edges .edge", EDGES))


def centre(locator):
    box = locator.bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def drag(page, start, end, steps=12):
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=steps)
    page.mouse.up()


@pytest.fixture
def unconnected(org, user):
    """The block monitor with State Set cut loose (its edge from the Condition deleted)."""
    from keeperstate.workflows.examples import block_monitor_graph

    nodes, edges = block_monitor_graph()
    kept = [e for e in edges if e["target"] != "state-set-1"]
    return make_workflow(org, name="Loose", user=user, nodes=nodes, edges=kept)


def test_the_connecting_banner_does_not_move_the_canvas_so_the_click_lands_on_the_card(author_page, unconnected,
                                                                                        artifacts):
    page = author_page
    open_editor(page, unconnected.id)
    canvas_before = page.locator("#canvas").bounding_box()
    target_before = card(page, "state-set-1").bounding_box()

    card(page, "condition-1").locator('.handle.out[data-handle="true"]').click()
    expect(page.locator("#connect-banner")).to_be_visible()
    page.screenshot(path=str(artifacts / "editor-connecting-banner.png"))

    assert page.locator("#canvas").bounding_box() == canvas_before
    assert card(page, "state-set-1").bounding_box() == target_before
    card(page, "state-set-1").locator(".node-head").click()
    expect(page.locator("#status")).to_contain_text("Connected New block? (true) → State Set")
    assert ("condition-1", "state-set-1", "true") in edge_pairs(page)


def test_dragging_a_handle_onto_a_card_connects_them(author_page, unconnected, artifacts):
    page = author_page
    open_editor(page, unconnected.id)
    handle = card(page, "condition-1").locator('.handle.out[data-handle="true"]')
    target = card(page, "state-set-1")

    page.mouse.move(*centre(handle))
    page.mouse.down()
    page.mouse.move(*centre(target), steps=12)
    expect(page.locator("#edges .edge-wire")).to_have_count(1)  # the connection follows the pointer
    page.screenshot(path=str(artifacts / "editor-drag-to-connect.png"))
    page.mouse.up()

    expect(page.locator("#status")).to_contain_text("Connected New block? (true) → State Set")
    assert ("condition-1", "state-set-1", "true") in edge_pairs(page)
    expect(page.locator("#edges .edge-wire")).to_have_count(0)
    expect(page.locator("#connect-banner")).to_be_hidden()
    page.keyboard.press("Control+z")  # one undo step
    assert ("condition-1", "state-set-1", "true") not in edge_pairs(page)


def test_dropping_a_handle_on_empty_canvas_picks_the_next_node_there(author_page, unconnected, artifacts):
    page = author_page
    open_editor(page, unconnected.id)
    handle = card(page, "state-set-1").locator('.handle.out[data-handle="success"]')
    hx, hy = centre(handle)

    drag(page, (hx, hy), (hx + 280, hy - 30))  # beside the graph: empty canvas

    picker = page.locator("#node-picker")
    expect(picker).to_be_visible()
    expect(picker.locator(".picker-search")).to_be_focused()
    page.screenshot(path=str(artifacts / "editor-drop-to-add.png"))
    page.keyboard.type("increment")
    page.keyboard.press("Enter")

    wait_for_form(page, "state-increment-1")
    expect(picker).to_be_hidden()
    expect(card(page, "state-increment-1")).to_have_class(has_class("selected"))
    assert ("state-set-1", "state-increment-1", "success") in edge_pairs(page)
    dropped = card(page, "state-increment-1").bounding_box()
    assert abs(dropped["x"] - (hx + 280)) < 80  # where it was dropped, not under the graph


def test_esc_closes_the_picker_and_adds_nothing(author_page, unconnected):
    page = author_page
    open_editor(page, unconnected.id)
    hx, hy = centre(card(page, "state-set-1").locator(".handle.out").first)
    drag(page, (hx, hy), (hx + 280, hy - 30))
    expect(page.locator("#node-picker")).to_be_visible()

    page.keyboard.press("Escape")

    expect(page.locator("#node-picker")).to_be_hidden()
    expect(page.locator(".node")).to_have_count(4)


def test_each_connection_says_how_many_items_passed_it_in_the_shown_run(author_page, org, user, artifacts):
    def node(node_id, label, y, config):
        return {"id": node_id, "type": "action", "position": {"x": 0, "y": y},
                "data": {"label": label, "type": "action", "config": config}}

    nodes = [
        trigger(),
        node("loop", "Loop", 150, {"actionType": "For Each", "items": "range(1, 3)"}),
        node("body", "Body", 300, {"actionType": "Set Fields", "fields": [
            {"name": "x", "expression": "<<@loop:Loop.item>>"}]}),
        node("after", "After", 450, {"actionType": "Set Fields", "fields": [
            {"name": "n", "expression": "<<@loop:Loop.count>>"}]}),
    ]
    edges = [{"id": "e1", "source": "trigger", "target": "loop"},
             {"id": "e2", "source": "loop", "target": "body", "sourceHandle": "each"},
             {"id": "e3", "source": "loop", "target": "after", "sourceHandle": "done"}]
    workflow = make_workflow(org, name="Items", user=user, nodes=nodes, edges=edges)
    run_workflow(workflow, {})
    page = author_page

    open_editor(page, workflow.id)

    counts = {e: page.locator(f'.edge[data-edge-id="{e}"] .edge-count') for e in ("e1", "e2", "e3")}
    expect(counts["e1"]).to_have_text("1 item")
    expect(counts["e2"]).to_have_text("3 items")
    expect(counts["e3"]).to_have_text("1 item")
    named = page.get_by_role("button", name="Connection from Loop (each) to Body (3 items in the shown run)")
    expect(named).to_have_count(1)
    page.locator("#canvas").screenshot(path=str(artifacts / "editor-item-counts.png"))

"""The canvas an author lives in: Auto-layout and fit keep every card apart and in view, edges go
round the cards between their ends, the canvas takes the window's height, the view pans and
zooms, and undo/redo take back every graph and config change exactly."""

from __future__ import annotations

import itertools

import pytest
from playwright.sync_api import expect

from keeperstate.workflows.models import Workflow
from tests.browser.helpers import (
    accept_next_dialog,
    add_from_palette,
    boxes,
    card,
    field,
    has_class,
    inside,
    open_editor,
    overlapping,
    save,
    select_node,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def add_false_branch(page) -> None:
    """A second branch off the Condition's false handle: State Increment, then State Delete."""
    select_node(page, "condition-1")
    add_from_palette(page, "State Increment", "state-increment-1")  # after a Condition: on its true branch
    field(page, "key").fill("misses")
    page.locator("#edges .edge[data-source='condition-1'][data-target='state-increment-1']").click()
    page.locator("#btn-delete-edge").click()  # the false branch is wanted: connected by hand
    card(page, "condition-1").locator('.handle.out[data-handle="false"]').click()
    card(page, "state-increment-1").locator(".node-head").click()
    select_node(page, "state-increment-1")
    add_from_palette(page, "State Delete", "state-delete-1")  # after the selected increment
    field(page, "key").fill("alert")
    expect(page.locator(".edge")).to_have_count(5)


def assert_apart_and_in_view(page) -> None:
    frame = page.locator("#canvas").bounding_box()
    cards = boxes(page)
    assert len(cards) == 6
    for (a_id, a), (b_id, b) in itertools.combinations(cards.items(), 2):
        assert not overlapping(a, b), f"{a_id} overlaps {b_id}"
    for node_id, box in cards.items():
        assert inside(box, frame), f"{node_id} is outside the visible canvas"


def test_auto_layout_and_fit_keep_every_card_apart_and_in_view(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    add_false_branch(page)

    page.locator("#btn-layout").click()
    assert_apart_and_in_view(page)
    cards = boxes(page)
    # top-down by rank, the two branches side by side under the Condition
    assert cards["trigger"]["y"] < cards["state-get-1"]["y"] < cards["condition-1"]["y"] < cards["state-set-1"]["y"]
    assert cards["state-set-1"]["y"] == cards["state-increment-1"]["y"]
    assert cards["state-set-1"]["x"] < cards["state-increment-1"]["x"]  # true left of false
    assert cards["state-delete-1"]["y"] > cards["state-increment-1"]["y"]
    page.screenshot(path=str(artifacts / "editor-auto-layout.png"))

    # when the view was moved away, Fit brings everything back
    page.locator("#btn-zoom-in").click()
    page.locator("#btn-zoom-in").click()
    page.locator("#canvas").press("ArrowLeft")
    page.locator("#btn-fit").click()
    assert_apart_and_in_view(page)


# Walks every edge's drawn path (getPointAtLength, every 2 px, in screen coordinates) and answers
# where it runs through a card, and where each path ends. Its own two cards count too: a path leaves
# from under its handle and ends above its target, so it has no business inside either of them.
EDGE_WALK = """() => {
  const cards = [...document.querySelectorAll('.node')]
    .map((c) => ({ id: c.dataset.nodeId, r: c.getBoundingClientRect() }));
  const crossings = [];
  const ends = {};
  for (const edge of document.querySelectorAll('#edges .edge')) {
    const path = edge.querySelector('.edge-line');
    const matrix = path.getScreenCTM();
    const length = path.getTotalLength();
    for (let s = 0; s <= length; s += 2) {
      const p = path.getPointAtLength(s).matrixTransform(matrix);
      for (const c of cards) {
        if (p.x > c.r.left + 1 && p.x < c.r.right - 1 && p.y > c.r.top + 1 && p.y < c.r.bottom - 1) {
          const at = `${Math.round(p.x)},${Math.round(p.y)}`;
          crossings.push(`${edge.dataset.source} -> ${edge.dataset.target} crosses ${c.id} at ${at}`);
          break;
        }
      }
    }
    const end = path.getPointAtLength(length).matrixTransform(matrix);
    ends[`${edge.dataset.source}->${edge.dataset.target}`] = { x: end.x, y: end.y };
  }
  return { crossings, ends };
}"""


def connect(page, source: str, target: str) -> None:
    card(page, source).locator(".handle.out").first.click()
    card(page, target).locator(".node-head").click()
    expect(page.locator(f'.edge[data-source="{source}"][data-target="{target}"]')).to_have_count(1)


def assert_edges_clear_of_cards(page, count: int) -> None:
    walk = page.evaluate(EDGE_WALK)
    assert walk["crossings"] == []
    assert len(walk["ends"]) == count
    cards = boxes(page)
    for name, end in walk["ends"].items():  # each path really ends on its target's top
        target = cards[name.split("->")[1]]
        assert end["x"] == pytest.approx(target["x"] + target["width"] / 2, abs=2), name
        assert end["y"] == pytest.approx(target["y"], abs=4), name


def test_edges_go_round_every_card_between_their_ends(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    add_false_branch(page)
    # given edges that a straight line would draw through cards: State Get → State Set skips the
    # Condition's rank, the trigger → State Delete skips three
    connect(page, "state-get-1", "state-set-1")
    connect(page, "trigger", "state-delete-1")

    # when the graph is laid out
    page.locator("#btn-layout").click()

    # then no edge passes through a card other than its own two
    assert_edges_clear_of_cards(page, 7)
    cards = boxes(page)
    skip = page.locator('.edge[data-source="state-get-1"][data-target="state-set-1"] .edge-line').bounding_box()
    condition = cards["condition-1"]
    assert skip["x"] < condition["x"]  # it goes beside the Condition, not through it
    page.screenshot(path=str(artifacts / "editor-edge-routing.png"))

    # and a back edge (State Delete dragged above everything) goes round too
    delete = cards["state-delete-1"]
    head = card(page, "state-delete-1").locator(".node-head").bounding_box()
    page.mouse.move(head["x"] + 10, head["y"] + 5)
    page.mouse.down()
    above_all = head["y"] + 5 - (delete["y"] - cards["trigger"]["y"]) - delete["height"] - 60
    page.mouse.move(head["x"] + 10, above_all, steps=6)
    page.mouse.up()
    moved = card(page, "state-delete-1").bounding_box()
    assert moved["y"] + moved["height"] < cards["trigger"]["y"]
    assert_edges_clear_of_cards(page, 7)
    page.screenshot(path=str(artifacts / "editor-back-edge.png"))


def test_the_canvas_takes_the_window_height_and_the_panels_scroll_on_their_own(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    # given a long form in the inspector
    select_node(page, "state-set-1")
    page.locator("#inspector details.advanced summary").click()

    heights = []
    for height in (800, 1100):
        # when the window is this tall
        page.set_viewport_size({"width": 1280, "height": height})

        # then the canvas runs from under the top bar and its toolbar down to the window's bottom
        canvas = page.locator("#canvas").bounding_box()
        toolbar = page.locator(".canvas-toolbar").bounding_box()
        assert canvas["y"] == pytest.approx(toolbar["y"] + toolbar["height"], abs=2)
        assert canvas["y"] + canvas["height"] == pytest.approx(height, abs=2)
        # the document itself never scrolls; the panels end at the window's bottom and scroll inside
        assert page.evaluate("document.scrollingElement.scrollHeight <= innerHeight")
        for panel in (".palette-column", "#inspector", "#run-panel"):
            box = page.locator(panel).bounding_box()
            assert box["y"] + box["height"] <= height + 1, panel
            assert page.locator(panel).evaluate("el => getComputedStyle(el).overflowY") == "auto", panel
        heights.append(canvas["height"])
        page.screenshot(path=str(artifacts / f"editor-1280x{height}.png"))

    assert heights[1] - heights[0] == pytest.approx(300, abs=2)  # it grows with the window
    inspector = page.locator("#inspector")
    page.set_viewport_size({"width": 1280, "height": 800})
    assert inspector.evaluate("el => el.scrollHeight > el.clientHeight")  # the long form scrolls in its panel
    inspector.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    assert page.locator("#canvas").bounding_box()["height"] == pytest.approx(heights[0], abs=1)
    assert page.evaluate("scrollY") == 0


def test_dragging_the_background_pans_and_zoom_scales_the_view(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    frame = page.locator("#canvas").bounding_box()
    before = card(page, "trigger").bounding_box()

    # pan: drag an empty spot of the background
    page.mouse.move(frame["x"] + 10, frame["y"] + 10)
    page.mouse.down()
    page.mouse.move(frame["x"] + 70, frame["y"] + 40, steps=5)
    page.mouse.up()
    panned = card(page, "trigger").bounding_box()
    assert (round(panned["x"] - before["x"]), round(panned["y"] - before["y"])) == (60, 30)
    expect(page.locator("#inspector .guide")).to_be_visible()  # a pan is not a click: nothing selected

    # zoom with the buttons
    page.locator("#btn-zoom-in").click()
    zoomed = card(page, "trigger").bounding_box()
    assert zoomed["width"] == pytest.approx(panned["width"] * 1.2, rel=0.02)
    page.locator("#btn-zoom-out").click()
    assert card(page, "trigger").bounding_box()["width"] == pytest.approx(panned["width"], rel=0.02)

    # zoom with the wheel, around the pointer
    page.mouse.move(frame["x"] + frame["width"] / 2, frame["y"] + frame["height"] / 2)
    page.mouse.wheel(0, 200)
    assert card(page, "trigger").bounding_box()["width"] < panned["width"] * 0.9
    expect(page.locator("#zoom-level")).not_to_have_text("100%")


def saved_graph(workflow: Workflow) -> tuple[list, list]:
    workflow.refresh_from_db()
    return workflow.nodes, workflow.edges


def test_undo_and_redo_restore_the_exact_saved_graph(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    page.locator("#btn-layout").click()
    save(page)
    original = saved_graph(monitor)

    # add (after State Set, so connected), edit its config, connect the false branch, delete State Set
    select_node(page, "state-set-1")
    add_from_palette(page, "State Delete", "state-delete-1")
    field(page, "key").fill("alert")
    field(page, "key").blur()
    card(page, "condition-1").locator('.handle.out[data-handle="false"]').click()
    card(page, "state-delete-1").locator(".node-head").click()
    select_node(page, "state-set-1")
    page.locator("#btn-delete-node").click()  # nothing references it: no question asked
    expect(card(page, "state-set-1")).to_have_count(0)
    save(page)
    edited = saved_graph(monitor)
    assert edited != original

    # undo all four steps: the graph is exactly what was saved before
    steps = ("delete State Set", "connect New block? to State Delete", "edit key of State Delete", "add State Delete")
    for step in steps:
        expect(page.locator("#btn-undo")).to_have_attribute("title", f"Undo: {step} (Ctrl+Z)")
        page.locator("#btn-undo").click()
    expect(page.locator("#btn-undo")).to_have_attribute("title", "Undo: auto-layout (Ctrl+Z)")  # the step before
    expect(card(page, "state-delete-1")).to_have_count(0)
    expect(card(page, "state-set-1")).to_have_count(1)
    save(page)
    assert saved_graph(monitor) == original

    # redo them from the keyboard: the edited graph is back
    page.locator("#canvas").focus()
    for _ in range(4):
        page.keyboard.press("Control+Shift+Z")
    expect(page.locator("#btn-redo")).to_be_disabled()
    save(page)
    assert saved_graph(monitor) == edited

    # and Ctrl+Z takes back the last one
    page.locator("#canvas").focus()
    page.keyboard.press("Control+z")
    expect(card(page, "state-set-1")).to_have_count(1)
    expect(page.locator("#status")).to_have_text("Undid: delete State Set.")


def test_undoing_a_config_edit_puts_the_old_value_back_in_the_open_form(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-get-1")
    field(page, "key").fill("height")
    field(page, "key").blur()
    expect(card(page, "state-get-1").locator(".summary-value")).to_have_text("height")

    page.locator("#btn-undo").click()

    expect(field(page, "key")).to_have_value("cursor")
    expect(card(page, "state-get-1").locator(".summary-value")).to_have_text("cursor")
    page.locator("#btn-redo").click()
    expect(field(page, "key")).to_have_value("height")


def test_a_broken_reference_is_marked_on_the_card_and_long_text_shows_whole_on_hover(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    condition = card(page, "condition-1")
    line = condition.locator(".summary-line")
    expect(line).to_have_attribute("title", "Condition: " + monitor.nodes[2]["data"]["config"]["condition"])
    expect(condition.locator(".ref-badge")).to_have_count(3)  # each reference as a badge, not cut to "not …"

    select_node(page, "state-get-1")
    accept_next_dialog(page)
    page.locator("#btn-delete-node").click()

    expect(condition).to_have_class(has_class("has-broken-reference"))
    expect(condition.locator(".ref-badge.missing").first).to_be_visible()

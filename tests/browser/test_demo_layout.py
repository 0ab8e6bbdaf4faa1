"""The demo graphs open in the editor as they are saved: their cards stand where Auto-layout puts
them, none overlaps another, and the editor has no reason to lay them out again."""

from __future__ import annotations

import itertools

import pytest
from playwright.sync_api import expect

from keeperstate.demo.seeding import DEMO_WORKFLOWS
from keeperstate.workflows.examples import block_monitor_graph
from tests.browser.helpers import boxes, open_editor, overlapping
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The reference monitor (the tests' `monitor`) and every graph the demo organization is seeded with.
GRAPHS = [block_monitor_graph, *(demo.graph for demo in DEMO_WORKFLOWS)]

PLACES = "cards => Object.fromEntries(cards.map((c) => [c.dataset.nodeId, {x: c.offsetLeft, y: c.offsetTop}]))"


@pytest.mark.parametrize("graph", GRAPHS, ids=[graph.__name__ for graph in GRAPHS])
def test_a_demo_graph_opens_as_saved_with_no_card_over_another(author_page, org, user, graph):
    # given the demo graph, saved as seeded
    nodes, edges = graph()
    workflow = make_workflow(org, name=graph.__name__, user=user, nodes=nodes, edges=edges)
    page = author_page

    # when the author opens it
    open_editor(page, workflow.id)

    # then every card stands where it was saved: nothing was laid out again
    expect(page.locator("#status")).not_to_contain_text("laid out again")
    expect(page.locator("#dirty-indicator")).to_be_hidden()
    assert page.eval_on_selector_all(".node", PLACES) == {n["id"]: n["position"] for n in nodes}
    # and no card covers another
    cards = boxes(page)
    assert len(cards) == len(nodes)
    for (a_id, a), (b_id, b) in itertools.combinations(cards.items(), 2):
        assert not overlapping(a, b), f"{a_id} overlaps {b_id}"

    # and those places are Auto-layout's own (give or take a few pixels of font rendering)
    page.locator("#btn-layout").click()
    laid_out = page.eval_on_selector_all(".node", PLACES)
    for node in nodes:
        assert laid_out[node["id"]]["x"] == node["position"]["x"], node["id"]
        assert laid_out[node["id"]]["y"] == pytest.approx(node["position"]["y"], abs=8), node["id"]

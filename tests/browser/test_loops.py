"""A For Each in the editor: its each and done handles, and a run's results per item."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.workflows.services import workflow_create
from tests.browser.helpers import card, open_editor, result_row, run
from tests.engine.test_loops import loop_graph

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def loop_workflow(org, user):
    nodes, edges = loop_graph()
    return workflow_create(organization=org, user=user, name="Loop", nodes=nodes, edges=edges)


def test_a_for_each_card_has_an_each_and_a_done_handle(author_page, loop_workflow):
    open_editor(author_page, loop_workflow.id)

    handles = card(author_page, "loop").locator(".handle.out")

    expect(handles).to_have_count(2)
    expect(handles.nth(0)).to_have_attribute("data-handle", "each")
    expect(handles.nth(1)).to_have_attribute("data-handle", "done")


def test_a_run_shows_each_items_result_of_a_body_node(author_page, loop_workflow):
    page = author_page
    open_editor(page, loop_workflow.id)

    run(page, '{"from": 3, "to": 5}')

    expect(result_row(page, "loop")).to_contain_text('"count": 3')
    last = result_row(page, "last")
    expect(last).to_contain_text("ran for 3 items, the last shown")
    last.locator(".result-iterations summary").click()
    items = last.locator(".iteration-list li")
    expect(items).to_have_count(3)
    expect(items.nth(0)).to_contain_text('"version": 1')
    expect(items.nth(2)).to_contain_text("#2")

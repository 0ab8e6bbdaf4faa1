"""What a node says of itself: Test step of a read-only HTTP Request neither warns of nor reports a
state write; the @ list offers a path below a field ("@result.hash") before the node ever ran, as
docs/http-and-secrets.md's build steps type it; a Set Fields card reads "head = …", not JSON."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.demo.graphs import live_block_monitor_graph
from tests.browser.helpers import card, field, open_editor, pick_reference, select_node
from tests.executions.graphs import trigger
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def http(node_id, label, y, **config):
    return {"id": node_id, "type": "action", "position": {"x": 0, "y": y},
            "data": {"label": label, "type": "action", "config": {"actionType": "HTTP Request", **config}}}


def test_test_step_of_a_read_only_http_request_asks_nothing_and_reports_no_state_write(author_page, org, user,
                                                                                       allow_server, artifacts):
    nodes = [trigger(), http("fetch", "Fetch", 140, method="GET", url=f"{allow_server.url}/block")]
    workflow = make_workflow(org, name="Fetcher", user=user, nodes=nodes,
                             edges=[{"id": "e1", "source": "trigger", "target": "fetch"}])
    page = author_page
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_editor(page, workflow.id)
    select_node(page, "fetch")

    box = page.locator("#inspector .test-step")
    expect(box).not_to_contain_text("writes to the workflow's own state")
    expect(box).to_contain_text("It writes no state of this workflow")
    page.locator("#btn-test-step").click()

    expect(page.locator("#test-step-result")).to_contain_text("✓ Succeeded")
    expect(page.locator("#test-step-result")).not_to_contain_text("wrote the workflow's state")
    assert dialogs == []
    page.locator("#inspector .test-step").screenshot(path=str(artifacts / "editor-test-step-http-get.png"))


def test_a_path_below_an_offered_field_is_offered_before_the_node_ever_ran(author_page, org, user):
    rpc = {"method": "POST", "url": "https://rpc.example/", "jsonRpc": True}
    nodes = [
        trigger(),
        http("head", "Head", 140, body='{"method": "eth_blockNumber", "params": []}', **rpc),
        http("block", "Block", 300, body='{"method": "eth_getBlockByNumber", "params": ["0x1", false]}', **rpc),
        http("send", "Send alert", 460, method="POST", url="https://alerts.example/"),
    ]
    edges = [{"id": "e1", "source": "trigger", "target": "head"}, {"id": "e2", "source": "head", "target": "block"},
             {"id": "e3", "source": "block", "target": "send"}]
    workflow = make_workflow(org, name="Never ran", user=user, nodes=nodes, edges=edges)
    page = author_page
    open_editor(page, workflow.id)
    select_node(page, "send")
    body = field(page, "body")
    body.click()
    body.press_sequentially('{"hash": "')

    pick_reference(page, body, "result.hash", "<<@block:Block.result.hash>>")

    body.press_sequentially('"}')
    expect(body).to_have_value('{"hash": "<<@block:Block.result.hash>>"}')


def test_a_set_fields_card_reads_name_equals_expression(author_page, org, user, artifacts):
    nodes, edges = live_block_monitor_graph("http://127.0.0.1:8000")
    workflow = make_workflow(org, name="Live monitor", user=user, nodes=nodes, edges=edges)
    page = author_page
    open_editor(page, workflow.id)

    summary = card(page, "range").locator(".node-summary")
    expect(summary.locator(".summary-key")).to_have_text(["head", "start", "end"])
    expect(summary.locator(".summary-value").first).to_have_text("= number(Headresult)")  # Head › result, a badge
    expect(summary).not_to_contain_text('{"name"')
    card(page, "range").screenshot(path=str(artifacts / "editor-set-fields-card.png"))

"""A node's data of the shown run, where the node is: its output and input as a collapsible tree, a
table or a schema, any path copied as a <<@…>> reference; pinned data (from a run or typed), marked
on the card and used by Run and Test step; a live preview under each computing field; sticky
notes; and the server's log line of each HTTP Request naming its workflow, node and run."""

from __future__ import annotations

import itertools
import json
import logging

import pytest
from playwright.sync_api import expect

from keeperstate.executions.service import run_workflow
from keeperstate.state.store import StateScope, state_get
from keeperstate.workflows.models import Workflow
from tests.browser.helpers import (
    accept_next_dialog,
    boxes,
    card,
    field,
    has_class,
    open_editor,
    overlapping,
    save,
    select_node,
)
from tests.executions.graphs import trigger
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def action(node_id, label, y, config):
    return {"id": node_id, "type": "action", "position": {"x": 0, "y": y},
            "data": {"label": label, "type": "action", "config": config}}


def chain(*nodes):
    pairs = itertools.pairwise(nodes)
    edges = [{"id": f"e{i}", "source": a["id"], "target": b["id"]} for i, (a, b) in enumerate(pairs, 1)]
    return list(nodes), edges


def value(workflow, key):
    return state_get(scope=StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id), key=key).value


@pytest.fixture
def clipboard(page):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    return lambda: page.evaluate("navigator.clipboard.readText()")


@pytest.fixture
def fetcher(org, user, allow_server):
    nodes, edges = chain(trigger(sampleInput={"n": 1}),
                         action("fetch", "Fetch", 150, {"actionType": "HTTP Request", "method": "GET",
                                                        "url": f"{allow_server.url}/block"}))
    workflow = make_workflow(org, name="Fetcher", user=user, nodes=nodes, edges=edges)
    run_workflow(workflow, {"n": 1})
    return workflow


def test_a_nodes_output_opens_as_a_tree_a_table_and_a_schema(author_page, fetcher, clipboard, artifacts):
    page = author_page
    open_editor(page, fetcher.id)
    select_node(page, "fetch")
    data = page.locator("#inspector .run-data")

    # a tree: objects and lists fold
    body = data.locator('details.tree-node[data-path="body"]')
    expect(body).to_have_attribute("open", "")
    expect(data.locator('.tree-row[data-path="body.hash"]')).to_contain_text('"0xabc"')
    data.screenshot(path=str(artifacts / "editor-run-data-tree.png"))
    body.locator("> summary").click()
    expect(data.locator('.tree-row[data-path="body.hash"]')).to_be_hidden()
    body.locator("> summary").click()

    # any path copies as a reference
    data.locator('.tree-row[data-path="body.miner.name"] .copy-ref').click()
    expect(page.locator("#status")).to_contain_text("Copied <<@fetch:Fetch.body.miner.name>>")
    assert clipboard() == "<<@fetch:Fetch.body.miner.name>>"

    # a table and a schema
    data.get_by_role("button", name="Table").click()
    expect(data.locator(".data-table tbody th")).to_have_text(["ok", "body", "status", "headers", "durationMs"])
    data.screenshot(path=str(artifacts / "editor-run-data-table.png"))
    data.get_by_role("button", name="Schema").click()
    expect(data.locator('.schema-row[data-path="body.txs[0].id"]')).to_contain_text("string")
    data.screenshot(path=str(artifacts / "editor-run-data-schema.png"))

    # the input: what the nodes before it gave, copied as their references
    data.get_by_role("button", name="Input").click()
    data.get_by_role("button", name="Tree").click()
    data.locator('.tree-row[data-path="Trigger.n"] .copy-ref').click()
    assert clipboard() == "<<@trigger:Trigger.n>>"


def test_a_long_text_folds_like_an_object(author_page, org, user):
    bloom = "0x" + "0" * 512
    nodes, edges = chain(trigger(), action("block", "Block", 150, {"actionType": "Set Fields", "fields": [
        {"name": "logsBloom", "expression": f"'{bloom}'"}, {"name": "number", "expression": "7"}]}))
    workflow = make_workflow(org, name="Bloom", user=user, nodes=nodes, edges=edges)
    run_workflow(workflow, {})
    page = author_page
    open_editor(page, workflow.id)
    select_node(page, "block")
    bloom_node = page.locator('#inspector details.tree-node[data-path="logsBloom"]')
    expect(bloom_node.locator(".tree-long")).to_have_text(bloom)

    bloom_node.locator("> summary").click()

    expect(bloom_node).not_to_have_attribute("open", "")
    expect(bloom_node.locator(".tree-long")).to_be_hidden()
    expect(bloom_node.locator("> summary")).to_contain_text("(514 characters)")


@pytest.fixture
def counting(org, user):
    """Trigger → Head (State Increment "head") → Copy (State Set "copy" = Head's value)."""
    nodes, edges = chain(trigger(), action("head", "Head", 150, {"actionType": "State Increment", "key": "head"}),
                         action("copy", "Copy", 300, {"actionType": "State Set", "key": "copy",
                                                       "value": "<<@head:Head.value>>"}))
    return make_workflow(org, name="Counting", user=user, nodes=nodes, edges=edges)


def test_a_pinned_output_is_marked_and_used_by_run_and_test_step_until_unpinned(author_page, counting, artifacts):
    run_workflow(counting, {})  # Head's value is 1
    page = author_page
    open_editor(page, counting.id)
    select_node(page, "head")

    page.locator("#btn-pin-run").click()
    expect(card(page, "head")).to_have_class(has_class("pinned"))
    expect(card(page, "head").locator(".node-pin")).to_have_text("pinned data")
    page.locator("#inspector").screenshot(path=str(artifacts / "editor-pinned-data.png"))

    # Run (saves first): Head does not run, its pinned output feeds Copy
    page.locator("#btn-run").click()
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    expect(card(page, "head").locator(".node-result")).to_have_text("✓ pinned data used")
    assert (value(counting, "head"), value(counting, "copy")) == (1, 1)
    saved = next(n for n in Workflow.objects.get(pk=counting.pk).nodes if n["id"] == "head")
    assert saved["data"]["pinnedData"]["value"] == 1

    # typed data: Test step of Copy reads it
    page.locator("#inspector .pin-edit summary").click()
    page.locator("#pin-text").fill(json.dumps({"value": 42, "version": 42, "created": False}))
    page.locator("#btn-pin-typed").click()
    expect(page.locator("#status")).to_contain_text("Pinned typed data as the output of Head")
    select_node(page, "copy")
    accept_next_dialog(page)
    page.locator("#btn-test-step").click()
    step = page.locator("#test-step-result")
    expect(step).to_contain_text("✓ Succeeded (success branch) · wrote the workflow's state")
    assert value(counting, "copy") == 42

    # unpinned, Head runs again
    select_node(page, "head")
    page.locator("#btn-unpin").click()
    expect(card(page, "head")).not_to_have_class(has_class("pinned"))
    page.locator("#btn-run").click()
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    expect(card(page, "head").locator(".node-result")).to_have_text("✓ ran")
    assert (value(counting, "head"), value(counting, "copy")) == (2, 2)


def test_a_field_previews_its_value_against_the_last_run_as_it_is_typed(author_page, monitor, artifacts):
    run_workflow(monitor, {"block": 100})
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "condition-1")
    preview = page.locator('#inspector output.field-preview[data-preview-for="condition"]')
    expect(preview).to_have_text("= true")

    field(page, "condition").fill("<<@trigger:Trigger.block>> + 1")
    expect(preview).to_have_text("= 101")
    page.locator("#inspector .form-box").screenshot(path=str(artifacts / "editor-live-preview.png"))
    field(page, "condition").fill("<<@trigger:Trigger.block>> +")
    expect(preview).to_contain_text("✗ CONDITION_INVALID")
    expect(preview).to_have_class(has_class("preview-error"))
    assert monitor.executions.count() == 1  # nothing ran


def test_a_sticky_note_is_kept_with_the_workflow_and_ignored_by_runs_and_validation(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)

    page.locator("#btn-note").click()
    note = card(page, "note-1")
    expect(note).to_have_class(has_class("note"))
    page.locator("#note-text").fill("The cursor is the last block alerted.")
    expect(note.locator(".note-text")).to_have_text("The cursor is the last block alerted.")
    save(page)
    page.locator("#btn-validate").click()
    expect(page.locator("#status")).to_have_text("No problems found.")
    page.locator("#btn-run").click()
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    page.locator("#canvas").screenshot(path=str(artifacts / "editor-sticky-note.png"))

    saved = next(n for n in Workflow.objects.get(pk=monitor.pk).nodes if n["id"] == "note-1")
    assert (saved["type"], saved["data"]["text"]) == ("note", "The cursor is the last block alerted.")
    assert "note-1" not in monitor.executions.get().node_results
    expect(note.locator(".handle")).to_have_count(0)  # nothing connects to a note
    page.keyboard.press("Delete")
    expect(card(page, "note-1")).to_have_count(0)


def test_auto_layout_moves_a_note_off_the_cards_it_would_cover(author_page, org, user):
    nodes, edges = chain(trigger(), action("head", "Head", 400, {"actionType": "State Get", "key": "head"}))
    note = {"id": "note-1", "type": "note", "position": {"x": 0, "y": 150},
            "data": {"label": "Note", "type": "note", "text": "Where Auto-layout puts Head."}}
    workflow = make_workflow(org, name="Noted", user=user, nodes=[*nodes, note], edges=edges)
    page = author_page
    open_editor(page, workflow.id)

    page.locator("#btn-layout").click()

    cards = boxes(page)
    for node_id in ("trigger", "head"):
        assert not overlapping(cards["note-1"], cards[node_id]), node_id


def test_each_http_request_in_the_log_names_its_workflow_node_and_run(author_page, org, user, allow_server, caplog):
    nodes, edges = chain(trigger(), action("fetch", "Fetch", 150, {"actionType": "HTTP Request", "method": "GET",
                                                                  "url": f"{allow_server.url}/block"}),
                         action("private", "Private", 300, {"actionType": "HTTP Request", "method": "GET",
                                                             "url": "http://10.0.0.1/metadata"}))
    workflow = make_workflow(org, name="Logged", user=user, nodes=nodes, edges=edges)
    caplog.set_level(logging.INFO, logger="keeperstate")
    page = author_page
    open_editor(page, workflow.id)

    page.locator("#btn-run").click()
    expect(page.locator("#run-status")).to_contain_text("Run failed")

    run = workflow.executions.get()
    lines = {r.getMessage(): r.levelno for r in caplog.records if r.getMessage().startswith("HTTP Request")}
    where = f"(workflow {workflow.id} node %s run {run.id})"
    [ok] = [line for line in lines if line.endswith(where % "fetch")]
    [blocked] = [line for line in lines if line.endswith(where % "private")]
    assert ok.startswith("HTTP Request GET 127.0.0.1 → 200")
    assert "HTTP_EGRESS_BLOCKED" in blocked
    assert lines[blocked] == logging.WARNING

"""Issue 40's done-when, in real Chromium against a real local chain (ganache) and a real alert
receiver: an author builds the chain monitor from an empty workflow by dragging connections (from
each node's handle onto empty canvas, picking the next node there; and onto a card), pins Head's
output from a first run, tests the Range node against the pin with its live preview, adds a sticky
note, runs it (the pin stands in for Head: exactly the pinned block is alerted, with its real hash),
opens the Block node's output as a tree and collapses logsBloom, and triggers the error workflow
with a failing run (the receiver gone), which a worker's step then runs.

Marked chain as well as browser: it needs ganache (tests/chain/conftest.py's `chain`)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.demo.graphs import ALERTS_SECRET
from keeperstate.executions.service import run_queued
from keeperstate.secrets.store import secret_put
from keeperstate.state.store import StateScope, state_get
from keeperstate.workflows.models import Workflow
from tests.browser.helpers import card, field, has_class, open_editor, select_node, wait_for_editor, wait_for_form
from tests.chain.conftest import chain  # noqa: F401 - the fixture, from the chain tier
from tests.chain.receiver import AlertReceiver
from tests.executions.test_error_workflow import setter
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.chain, pytest.mark.django_db(transaction=True)]

TOKEN = "done-when-40-alerts-token"
ITEM = "<<@for-each-1:Each block.item>>"
HASH = "<<@http-request-2:Block.result.hash>>"


@pytest.fixture
def receiver():
    running = AlertReceiver(TOKEN).start()
    try:
        yield running
    finally:
        running.stop()


def box_of(locator):
    """Its box on the screen. The canvas redraws its cards on every change (a field typed): a box
    asked for while a card is replaced is None, so it is asked again."""
    for _ in range(50):
        expect(locator).to_be_visible()
        if (box := locator.bounding_box()) is not None:
            return box
    raise AssertionError(f"{locator} has no box")


def centre(locator):
    box = box_of(locator)
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def room_below(page, node_id, needed=300):
    """Pan the canvas up (dragging its empty left edge) until the card has `needed` px below it."""
    canvas = box_of(page.locator("#canvas"))
    bottom = box_of(card(page, node_id))
    short = bottom["y"] + bottom["height"] + needed - (canvas["y"] + canvas["height"])
    if short > 0:
        x, y = canvas["x"] + 12, canvas["y"] + canvas["height"] - 12
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x, y - short, steps=8)
        page.mouse.up()


def drag_next(page, from_node, action_id, new_node, handle=""):
    """Drag from a node's handle to the empty canvas below it and pick the next node's action."""
    room_below(page, from_node)
    selector = f'.handle.out[data-handle="{handle}"]' if handle else ".handle.out"
    hx, hy = centre(card(page, from_node).locator(selector))
    page.mouse.move(hx, hy)
    page.mouse.down()
    page.mouse.move(hx - 40, hy + 110, steps=10)
    page.mouse.up()
    expect(page.locator("#node-picker")).to_be_visible()
    page.locator(f'#node-picker .picker-entry[data-action-id="{action_id}"]').click()
    wait_for_form(page, new_node)


def label(page, text):
    page.locator("#node-label").fill(text)


def json_rpc(page, url, body):
    field(page, "method").select_option("POST")
    field(page, "url").fill(url)
    field(page, "body").fill(body)
    field(page, "jsonRpc").select_option("true")


def kept(workflow, key):
    return state_get(scope=StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id), key=key)


def test_build_pin_test_note_run_inspect_and_fail_the_chain_monitor(author_page, chain, receiver, org, user,  # noqa: F811
                                                                    settings, artifacts):
    settings.KEEPERSTATE_HTTP_ALLOW = [chain.address, receiver.address]
    secret_put(organization=org, name=ALERTS_SECRET, value=TOKEN)
    nodes, edges = setter("<<@trigger:Trigger.errorCode>>")
    on_error = make_workflow(org, name="On error", user=user, nodes=nodes, edges=edges)
    chain.mine(3)
    page = author_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])

    # an empty workflow; Head, dragged out of the trigger's handle
    page.goto("/builder/")
    page.locator("#id_name").fill("Chain monitor")
    page.get_by_role("button", name="Create workflow").click()
    wait_for_editor(page)
    monitor = Workflow.objects.get(name="Chain monitor")
    drag_next(page, "trigger", "HTTP Request", "http-request-1")
    label(page, "Head")
    json_rpc(page, chain.url, '{"method": "eth_blockNumber", "params": []}')
    drag_next(page, "http-request-1", "State Get", "state-get-1")
    label(page, "Cursor")
    field(page, "key").fill("cursor")

    # a first run; Head's output pinned from it
    page.locator("#btn-run").click()
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    select_node(page, "http-request-1")
    page.locator("#btn-pin-run").click()
    expect(card(page, "http-request-1")).to_have_class(has_class("pinned"))
    page.screenshot(path=str(artifacts / "done-when-40-1-head-pinned.png"))
    chain.mine(4)  # the chain moves on to 7; the pin stays at 3

    # Range, tested against the pin with its live preview
    drag_next(page, "state-get-1", "Set Fields", "set-fields-1")
    label(page, "Range")
    field(page, "fields").fill(
        "head = number(<<@http-request-1:Head.result>>)\n"
        "start = if(<<@state-get-1:Cursor.exists>>, number(<<@state-get-1:Cursor.value>>) + 1, head)\n"
        "end = min(head, start + 9)")
    preview = page.locator('#inspector output.field-preview[data-preview-for="fields"]')
    expect(preview).to_have_text('= {"head":3,"start":3,"end":3}')
    page.locator("#btn-test-step").click()
    expect(page.locator("#test-step-result")).to_contain_text("✓ Succeeded")
    expect(page.locator("#test-step-result")).to_contain_text('"head": 3')
    page.locator("#inspector").screenshot(path=str(artifacts / "done-when-40-2-range-preview-and-step.png"))

    # the loop and its body, each dragged out of the node before
    drag_next(page, "set-fields-1", "For Each", "for-each-1")
    label(page, "Each block")
    field(page, "items").fill("range(<<@set-fields-1:Range.start>>, <<@set-fields-1:Range.end>>)")
    drag_next(page, "for-each-1", "Set Fields", "set-fields-2", handle="each")
    label(page, "Block number")
    field(page, "fields").fill(f"hex = hex({ITEM})")
    drag_next(page, "set-fields-2", "HTTP Request", "http-request-2")
    label(page, "Block")
    json_rpc(page, chain.url,
             '{"method": "eth_getBlockByNumber", "params": ["<<@set-fields-2:Block number.hex>>", false]}')
    drag_next(page, "http-request-2", "HTTP Request", "http-request-3")
    label(page, "Send alert")
    field(page, "method").select_option("POST")
    field(page, "url").fill(receiver.url)
    header = page.locator('#inspector .pairs[data-pairs-for="headers"] .pair-row').nth(0)
    header.locator(".pair-name").fill("Authorization")
    header.locator(".pair-value").fill(f"Bearer <<@__secrets:Secrets.{ALERTS_SECRET}>>")
    field(page, "body").fill(f'{{"block": {ITEM}, "hash": "{HASH}", "dedupKey": "{HASH}"}}')

    # Save cursor from the palette, unconnected, then a handle dragged onto its card
    page.locator("#canvas").click(position={"x": 10, "y": 10})  # nothing selected: not connected
    page.locator('.palette-entry[data-entry-id="State Set"]').click()
    wait_for_form(page, "state-set-1")
    label(page, "Save cursor")
    field(page, "key").fill("cursor")
    field(page, "value").fill(ITEM)
    page.locator("#btn-validate").click()  # Problems (unconnected) shown first: the canvas stays put after
    expect(page.locator("#problems-list")).to_contain_text("REFERENCE_NOT_UPSTREAM")
    page.locator("#btn-layout").click()
    page.mouse.move(*centre(card(page, "http-request-3").locator(".handle.out")))
    page.mouse.down()
    page.mouse.move(*centre(card(page, "state-set-1").locator(".node-head")), steps=12)
    page.mouse.up()
    expect(page.locator("#status")).to_contain_text("Connected Send alert → Save cursor")

    # a sticky note
    page.locator("#btn-note").click()
    page.locator("#note-text").fill("Head is pinned while building: unpin it before switching the monitor on.")
    page.locator("#btn-layout").click()
    page.screenshot(path=str(artifacts / "done-when-40-3-built-by-dragging.png"))

    # run it: the pinned Head (block 3) is what the run sees; the chain's block 3 is alerted
    page.locator("#btn-run").click()
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    assert receiver.blocks() == [3]
    assert receiver.deliveries[0]["hash"] == chain.block(3)["hash"]
    assert kept(monitor, "cursor").value == 3
    saved = Workflow.objects.get(pk=monitor.pk)
    assert {n["type"] for n in saved.nodes} == {"trigger", "action", "note"}
    assert len(saved.edges) == 8
    head = next(n for n in saved.nodes if n["id"] == "http-request-1")
    assert head["data"]["pinnedData"]["result"] == "0x3"  # saved with the workflow, in the node
    page.screenshot(path=str(artifacts / "done-when-40-4-run.png"))

    # the Block node's output as a tree, logsBloom collapsed
    select_node(page, "http-request-2")
    bloom = page.locator('#inspector .run-data details.tree-node[data-path="result.logsBloom"]')
    expect(bloom).to_have_attribute("open", "")
    expect(bloom.locator(".tree-long")).to_have_text(chain.block(3)["logsBloom"])
    bloom.locator("> summary").click()
    expect(bloom.locator(".tree-long")).to_be_hidden()
    page.locator('#inspector .run-data .tree-row[data-path="result.hash"] .copy-ref').click()
    expect(page.locator("#status")).to_contain_text(f"Copied {HASH}")
    page.locator("#inspector .run-data").screenshot(path=str(artifacts / "done-when-40-5-block-tree.png"))

    # the error workflow, chosen in Settings, started by a failing run (the receiver is gone)
    page.locator("#btn-settings").click()
    page.locator("#settings-error-workflow").select_option(label="On error")
    page.locator("#settings-save").click()
    expect(page.locator("#status")).to_contain_text("a failed run starts On error")
    select_node(page, "http-request-1")
    page.locator("#btn-unpin").click()
    receiver.stop()
    page.locator("#btn-run").click()
    expect(page.locator("#run-status")).to_contain_text("Run failed")
    expect(card(page, "http-request-3").locator(".node-result")).to_contain_text("HTTP_REQUEST_FAILED")
    page.screenshot(path=str(artifacts / "done-when-40-6-failing-run.png"))
    error_run = on_error.executions.get()
    assert error_run.input["workflow"] == {"id": str(monitor.id), "name": "Chain monitor"}
    assert error_run.input["failedNode"]["label"] == "Send alert"
    run_queued(error_run.id, error_run.organization_id)  # what a worker does with it
    assert kept(on_error, "kept").value == "HTTP_REQUEST_FAILED"
    open_editor(page, on_error.id)
    expect(page.locator("#run-status")).to_contain_text("Last run succeeded")
    expect(page.locator("#run-status")).to_contain_text("(error)")
    page.screenshot(path=str(artifacts / "done-when-40-7-error-workflow-ran.png"))

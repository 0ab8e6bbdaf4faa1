"""Keyboard input goes only where the author is looking, and what the editor says follows the
document at once: a click on a card takes the focus from any form field (so a shortcut and the
text after it never land in a node's form), Problems and red borders follow undo, "Unsaved
changes" goes when undo comes back to the saved graph, a due tick reads "due now", a palette
trigger asks before replacing the workflow's, Ctrl+Enter runs and Ctrl+A selects every node."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from keeperstate.workflows.models import Workflow
from tests.browser.helpers import card, field, has_class, open_editor, select_node, wait_for_form
from tests.executions.graphs import counter_graph
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_clicking_the_selected_card_again_sends_a_shortcut_and_text_to_the_canvas_not_the_form(author_page, monitor,
                                                                                                artifacts):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-set-1")
    field(page, "key").click()  # the caret is in State Set's Key
    expect(field(page, "key")).to_be_focused()

    # a click on the card the form belongs to, then "/" + "http" + Enter
    card(page, "state-set-1").locator(".node-head").click()
    page.keyboard.type("/")
    page.keyboard.type("http")
    page.keyboard.press("Enter")

    # the palette search took them: an HTTP Request is added after State Set, whose Key is as it was
    wait_for_form(page, "http-request-1")
    expect(card(page, "http-request-1")).to_have_class(has_class("selected"))
    page.screenshot(path=str(artifacts / "editor-focus-after-card-click.png"))
    select_node(page, "state-set-1")
    expect(field(page, "key")).to_have_value("cursor")
    expect(page.locator("#btn-undo")).to_have_attribute("title", "Undo: add HTTP Request (Ctrl+Z)")


def test_clicking_another_card_leaves_the_first_nodes_field_unchanged(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-get-1")
    field(page, "key").click()

    card(page, "condition-1").locator(".node-head").click()
    page.keyboard.type("/http")
    page.keyboard.press("Enter")

    wait_for_form(page, "http-request-1")
    select_node(page, "state-get-1")
    expect(field(page, "key")).to_have_value("cursor")


def test_problems_and_red_borders_follow_undo_at_once(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-set-1")
    field(page, "key").fill("")
    page.locator("#btn-validate").click()
    expect(page.locator("#problems")).to_be_visible()
    expect(card(page, "state-set-1")).to_have_class(has_class("has-error"))

    page.locator("#canvas").focus()
    page.keyboard.press("Control+z")  # Key is back: no Validate needed to say so

    expect(page.locator("#problems")).to_be_hidden()
    expect(card(page, "state-set-1")).not_to_have_class(has_class("has-error"))
    expect(field(page, "key")).to_have_value("cursor")
    expect(page.locator('.field[data-field="key"]')).not_to_have_class(has_class("has-error"))

    page.keyboard.press("Control+Shift+z")  # and back again with redo
    expect(page.locator("#problems")).to_be_visible()
    expect(card(page, "state-set-1")).to_have_class(has_class("has-error"))


def test_problems_follow_a_new_connection_without_validate(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    page.locator('.edge[data-edge-id="e3"]').click()
    page.keyboard.press("Delete")  # State Set cut loose from the Condition
    page.locator("#btn-validate").click()
    expect(page.locator("#problems-list")).to_contain_text("State Set")

    card(page, "condition-1").locator('.handle.out[data-handle="true"]').click()
    card(page, "state-set-1").locator(".node-head").click()  # connected again

    expect(page.locator("#problems")).to_be_hidden()
    expect(card(page, "state-set-1")).not_to_have_class(has_class("has-error"))


def test_undoing_back_to_the_saved_graph_is_not_an_unsaved_change(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-get-1")
    page.locator("#node-label").fill("Cursor")
    expect(page.locator("#dirty-indicator")).to_be_visible()

    page.locator("#canvas").focus()
    page.keyboard.press("Control+z")

    expect(card(page, "state-get-1").locator(".node-label")).to_have_text("State Get")
    expect(page.locator("#dirty-indicator")).to_be_hidden()


def test_a_due_tick_reads_due_now_never_a_time_ago(author_page, org, user):
    nodes, edges = counter_graph("Schedule", interval=60)
    workflow = make_workflow(org, name="Ticking", user=user, nodes=nodes, edges=edges)
    Workflow.objects.filter(pk=workflow.pk).update(active=True, next_run_at=timezone.now() - timedelta(seconds=3))
    page = author_page

    open_editor(page, workflow.id)

    expect(page.locator("#next-run")).to_have_text("Next run due now")
    page.wait_for_timeout(1500)  # the line counts every second: still not "… ago"
    expect(page.locator("#next-run")).not_to_contain_text("ago")


def test_a_palette_trigger_asks_before_replacing_the_workflows_trigger(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    webhook = page.locator('.palette-entry[data-entry-id="Webhook"]')

    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    webhook.click()
    expect(page.locator("#status")).to_contain_text("Kept the Manual trigger")
    assert "Make it a Webhook trigger instead?" in asked[0]
    expect(card(page, "trigger").locator(".node-type")).to_contain_text("Manual trigger")
    expect(page.locator("#btn-undo")).to_be_disabled()  # nothing happened

    page.once("dialog", lambda dialog: dialog.accept())
    webhook.click()
    expect(card(page, "trigger").locator(".node-type")).to_contain_text("Webhook trigger")


def test_ctrl_enter_runs_from_a_form_field_and_ctrl_a_selects_every_node(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    page.locator("#run-input").fill('{"block": 7}')
    select_node(page, "state-set-1")
    field(page, "key").click()

    page.keyboard.press("Control+Enter")
    expect(page.locator("#run-status")).to_contain_text('Run succeeded at')
    expect(page.locator("#run-status")).to_contain_text('{"block":7}')

    page.locator("#canvas").focus()
    page.keyboard.press("Control+a")
    for node_id in ("trigger", "state-get-1", "condition-1", "state-set-1"):
        expect(card(page, node_id)).to_have_class(re.compile(r"(^|\s)(selected|in-selection)(\s|$)"))
    expect(page.locator("#status")).to_contain_text("4 nodes selected")
    page.keyboard.press("Control+c")  # and they copy as a selection (the trigger never does)
    expect(page.locator("#status")).to_contain_text("Copied 3 nodes")

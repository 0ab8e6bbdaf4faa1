"""References as the editor draws them: a secret is a secret, never a reference to a deleted node."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.demo.graphs import live_block_monitor_graph
from tests.browser.helpers import card, has_class, open_editor, select_node
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_node_using_a_secret_is_not_drawn_as_broken(author_page, org, user, artifacts):
    # given the demo monitor, whose Send alert sends Bearer <<@__secrets:Secrets.ALERTS_TOKEN>>
    nodes, edges = live_block_monitor_graph("http://127.0.0.1:9")
    workflow = make_workflow(org, name="Live monitor", user=user, nodes=nodes, edges=edges)
    page = author_page

    # when the author opens it and selects Send alert
    open_editor(page, workflow.id)
    alert = card(page, "send-alert")

    # then the card is not marked broken and its summary names the secret
    expect(alert).not_to_have_class(has_class("has-broken-reference"))
    assert "deleted node" not in (alert.get_attribute("aria-label") or "")
    badge = alert.locator(".ref-badge.secret")
    expect(badge).to_have_count(1)
    expect(badge).to_contain_text("Secret ALERTS_TOKEN")
    expect(alert.locator(".ref-badge.missing")).to_have_count(0)
    # and the inspector's badges say the same
    select_node(page, "send-alert")
    inspector_badge = page.locator("#inspector .ref-badge.secret").first
    expect(inspector_badge).to_contain_text("Secret ALERTS_TOKEN")
    expect(page.locator("#inspector .ref-badge.missing")).to_have_count(0)
    expect(page.locator("#inspector")).not_to_contain_text("node deleted")
    alert.screenshot(path=str(artifacts / "editor-secret-badge.png"))


def test_a_reference_to_a_deleted_node_is_still_marked(author_page, org, user):
    nodes, edges = live_block_monitor_graph("http://127.0.0.1:9")
    nodes = [n for n in nodes if n["id"] != "block"]  # Send alert reads Block's hash
    edges = [e for e in edges if "block" not in (e["source"], e["target"])]
    workflow = make_workflow(org, name="Gap", user=user, nodes=nodes, edges=edges)
    page = author_page

    open_editor(page, workflow.id)

    expect(card(page, "send-alert")).to_have_class(has_class("has-broken-reference"))
    expect(card(page, "send-alert").locator(".ref-badge.missing").first).to_be_visible()

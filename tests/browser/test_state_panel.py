"""The read-only State panel next to the run results: what runs wrote, each key's history and
the organization's usage, refreshed after every Run; and the State actions driven from it."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from keeperstate.state.maintenance import admin_update
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import StateScope, state_set
from tests.browser.helpers import (
    add_from_palette,
    card,
    create_workflow,
    field,
    open_editor,
    pick_reference,
    result_row,
    run,
    save,
    select_node,
    show_results,
    show_state,
    state_row,
)
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EMPTY = "This workflow has no stored state yet. State Set writes it when the workflow runs."


def short(execution) -> str:
    return f"run {str(execution.id)[:8]}"


def test_two_runs_of_the_monitor_show_the_cursor_and_its_history(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    show_state(page)
    expect(page.locator("#state-status")).to_have_text(EMPTY)
    expect(page.locator("#state-usage")).to_contain_text("This workflow: 0 of 100 keys")

    # when the monitor runs twice
    run(page, '{"block": 100}')
    expect(state_row(page, "cursor").locator(".state-version")).to_have_text("v1")
    run(page, '{"block": 101}')

    # then the panel shows the cursor as the second run left it
    first, second = monitor.executions.order_by("started_at")
    cursor = state_row(page, "cursor")
    expect(cursor.locator(".state-version")).to_have_text("v2")
    expect(cursor.locator(".state-value")).to_have_text("101")
    expect(cursor.locator(".state-expiry")).to_have_text("never")
    expect(cursor.locator(".state-writer")).to_have_text(short(second))
    expect(page.locator("#state-status")).to_be_hidden()
    expect(page.locator("#state-tab-count")).to_have_text("(1)")
    expect(page.locator("#state-usage")).to_contain_text("This workflow: 1 of 100 keys")
    expect(page.locator("#state-usage")).to_contain_text("Organization: 1 of 10,000 keys · 3 bytes of 50 MB")

    # and its history, newest first, once expanded (Run showed its results: back to State)
    show_state(page)
    cursor.locator("summary").click()
    expect(cursor.locator(".state-history")).to_have_attribute("data-loaded", "true")
    update, insert = cursor.locator(".history-item").all()
    expect(update.locator(".history-op")).to_have_text("updated")
    expect(update.locator(".history-change")).to_have_text("100 → 101")
    expect(update.locator(".history-version")).to_have_text("v1 → v2")
    expect(update.locator(".history-by")).to_have_text(f"by {short(second)}")
    expect(insert.locator(".history-op")).to_have_text("created")
    expect(insert.locator(".history-change")).to_have_text("100")
    expect(insert.locator(".history-version")).to_have_text("v1")
    expect(insert.locator(".history-by")).to_have_text(f"by {short(first)}")
    page.locator("#state-recent summary").click()
    expect(page.locator("#state-recent-list .history-item")).to_have_count(2)
    page.locator("#run-panel").screenshot(path=str(artifacts / "state-panel.png"))
    page.screenshot(path=str(artifacts / "editor-state-panel.png"))

    # the expanded key stays open when Refresh reads the state again
    page.locator("#btn-state-refresh").click()
    expect(state_row(page, "cursor")).to_have_attribute("open", "")
    expect(state_row(page, "cursor").locator(".history-item")).to_have_count(2)


def test_a_lost_compare_and_set_follows_the_conflict_branch(author_page, org, user, artifacts):
    # given Trigger → State Set "lock", loaded through the model
    nodes = [
        {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
         "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": "Manual", "sampleInput": {}}}},
        {"id": "state-set-1", "type": "action", "position": {"x": 0, "y": 150},
         "data": {"label": "Take lock", "type": "action",
                  "config": {"actionType": "State Set", "key": "lock", "value": "held"}}},
    ]
    edges = [{"id": "e1", "source": "trigger", "target": "state-set-1"}]
    workflow = make_workflow(org, name="Lock", user=user, nodes=nodes, edges=edges)
    page = author_page
    open_editor(page, workflow.id)

    # when the author makes it a compare-and-set on absence that branches on conflict
    select_node(page, "state-set-1")
    expect(field(page, "onConflict")).to_be_hidden()
    page.locator("#inspector details.advanced summary").click()
    field(page, "expectedVersion").fill("0")
    field(page, "onConflict").select_option("branch")

    # and adds a State Set "lost" on its conflict handle, valued with the @ menu
    page.locator("#canvas").click(position={"x": 8, "y": 8})  # nothing selected: added unconnected
    add_from_palette(page, "State Set", "state-set-2")
    expect(page.locator(".edge")).to_have_count(1)
    card(page, "state-set-1").locator('.handle.out[data-handle="conflict"]').click()
    card(page, "state-set-2").locator(".node-head").click()
    expect(page.locator(".edge-label.conflict")).to_have_count(1)
    field(page, "key").fill("lost")
    value = field(page, "value")
    value.click()
    pick_reference(page, value, "currentVers", "<<@state-set-1:Take lock.currentVersion>>")
    save(page)

    # then the first run takes the lock and skips the conflict branch
    run(page, "{}")
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    expect(result_row(page, "state-set-1")).to_contain_text('"conflict": false')
    expect(result_row(page, "state-set-2")).to_contain_text("skipped")

    # and the second run loses the compare-and-set, succeeds, and runs "lost"
    run(page, "{}")
    expect(page.locator("#run-status")).to_contain_text("Run succeeded")
    lock_result = result_row(page, "state-set-1")
    expect(lock_result).to_contain_text("succeeded")
    expect(lock_result).to_contain_text('"conflict": true')
    expect(lock_result).to_contain_text('"currentVersion": 1')
    expect(result_row(page, "state-set-2")).to_contain_text("succeeded")
    expect(card(page, "state-set-2")).to_contain_text("✓ ran")
    lock_box, lost_box = card(page, "state-set-1").bounding_box(), card(page, "state-set-2").bounding_box()
    assert lock_box is not None
    assert lost_box is not None
    assert lost_box["y"] > lock_box["y"] + lock_box["height"]  # placed below the taller card, not over it

    show_state(page)
    expect(state_row(page, "lost").locator(".state-value")).to_have_text("1")
    expect(state_row(page, "lock").locator(".state-value")).to_have_text('"held"')
    expect(state_row(page, "lock").locator(".state-version")).to_have_text("v1")
    page.screenshot(path=str(artifacts / "state-panel-conflict.png"))
    show_results(page)
    expect(result_row(page, "state-set-2")).to_be_visible()
    assert WorkflowState.objects.get(workflow=workflow, key="lost").value == 1


def test_state_increment_from_the_palette_counts_runs(author_page):
    page = author_page
    create_workflow(page, "Hit counter")
    select_node(page, "trigger")
    add_from_palette(page, "State Increment", "state-increment-1")
    field(page, "key").fill("hits")
    show_state(page)

    for count in (1, 2, 3):
        run(page, "{}")
        expect(state_row(page, "hits").locator(".state-value")).to_have_text(str(count))

    hits = state_row(page, "hits")
    expect(hits.locator(".state-version")).to_have_text("v3")
    show_state(page)  # Run showed its results
    hits.locator("summary").click()
    expect(hits.locator(".history-item")).to_have_count(3)
    expect(hits.locator(".history-item").first.locator(".history-change")).to_have_text("2 → 3")
    show_results(page)
    expect(result_row(page, "state-increment-1")).to_contain_text('"value": 3')


def test_long_values_are_cut_in_the_row_and_whole_when_expanded(author_page, monitor):
    # given a long value with a TTL, and a key an admin repaired
    scope = StateScope(organization_id=monitor.organization_id, workflow_id=monitor.id)
    long_value = {"note": "x" * 100}  # one key: jsonb orders an object's keys its own way
    state_set(scope=scope, key="alert", value=long_value, ttl=3600)
    state_set(scope=scope, key="cursor", value=7)
    admin_update(state_id=WorkflowState.objects.get(key="cursor").pk, value=8, expires_at=None, actor="admin:root")
    page = author_page
    open_editor(page, monitor.id)
    show_state(page)

    alert = state_row(page, "alert")
    value = alert.locator(".state-value")
    expect(value).to_have_text(re.compile(r'^\{"note":"x{50}…$'))
    expect(value).to_have_attribute("title", json.dumps(long_value, separators=(",", ":")))
    expect(alert.locator(".state-expiry")).to_have_text("in 60 minutes")
    expect(alert.locator(".state-full-value")).to_be_hidden()
    alert.locator("summary").click()
    expect(alert.locator(".state-full-value")).to_have_text(json.dumps(long_value, indent=2))
    expect(state_row(page, "cursor").locator(".state-writer")).to_have_text("admin:root")
    expect(page.locator("#state-usage")).to_contain_text("2 of 100 keys")

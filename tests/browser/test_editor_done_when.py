"""Issue 23's done-when: an author builds a self-running monitor from an empty workflow using
paste, palette search and Test step, watches three runs arrive without a reload, retries the
failed one, restores an earlier version, and exports and re-imports the workflow.

The monitor: every 10 s → Head (State Increment: a stand-in for the chain head, one block more
per tick) → Cursor (State Get) → New block? (Condition) —true→ Save cursor (State Set with
compare-and-set). Its last three nodes are pasted from the reference monitor, whose Condition
reads the trigger's ``block``, which a schedule tick has not: the first tick fails, the author
fixes the Condition (checking it with Test step on that failed run's outputs) and retries it.
The ticks are the scheduler's own step (queue_run with trigger=schedule, as
keeperstate.executions.scheduling queues them, then the worker's run_queued) called from the test while
the page stays open.
"""

from __future__ import annotations

import json
import time

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import queue_run, run_queued
from keeperstate.state.store import StateScope, state_get
from keeperstate.workflows.examples import block_monitor_graph
from keeperstate.workflows.models import Workflow
from tests.browser.helpers import (
    card,
    field,
    open_editor,
    save,
    select_node,
    wait_for_editor,
    wait_for_form,
)
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HEAD = "<<@state-increment-1:State Increment.value>>"
CONDITION = f"not <<@state-get-1:State Get.exists>> or {HEAD} > <<@state-get-1:State Get.value>>"


def tick(workflow_id):
    """One schedule tick, as the scheduler starts it."""
    workflow = Workflow.objects.get(pk=workflow_id)
    now = timezone.now()
    queued = queue_run(workflow, {"scheduledFor": now.isoformat(), "firedAt": now.isoformat()},
                       trigger=WorkflowExecution.Trigger.SCHEDULE, scheduled_for=now).execution
    return run_queued(queued.pk, queued.organization_id)


def cursor(workflow):
    return state_get(scope=StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id), key="cursor")


def test_build_the_self_running_monitor_watch_it_retry_restore_export_import(author_page, org, user, artifacts,
                                                                             tmp_path):
    page = author_page
    rows = page.locator("#runs-list .run-row")

    # the reference monitor's last three nodes go to the clipboard
    nodes, edges = block_monitor_graph()
    reference = make_workflow(org, name="Reference monitor", user=user, nodes=nodes, edges=edges)
    open_editor(page, reference.id)
    select_node(page, "state-get-1")
    for node_id in ("condition-1", "state-set-1"):
        card(page, node_id).locator(".node-head").click(modifiers=["Shift"])
    page.keyboard.press("Control+c")
    expect(page.locator("#status")).to_contain_text("Copied 3 nodes")

    # an empty workflow, its trigger every 10 s
    page.goto("/builder/")
    page.locator("#id_name").fill("Self-running monitor")
    page.get_by_role("button", name="Create workflow").click()
    wait_for_editor(page)
    monitor = Workflow.objects.get(name="Self-running monitor")
    select_node(page, "trigger")
    field(page, "triggerType").select_option("Schedule")
    wait_for_form(page, "trigger")
    expect(field(page, "interval")).to_be_visible()
    field(page, "interval").fill("10")
    field(page, "interval").blur()

    # palette search: "incr", Enter adds State Increment after the trigger
    page.locator("#palette-search").fill("incr")
    page.locator("#palette-search").press("Enter")
    wait_for_form(page, "state-increment-1")
    field(page, "key").fill("head")

    # paste the three nodes and connect them after Head
    page.locator("#canvas").focus()
    page.keyboard.press("Control+v")
    expect(card(page, "state-get-1")).to_be_visible()
    card(page, "state-increment-1").locator(".handle.out").click()
    card(page, "state-get-1").locator(".node-head").click()
    save(page)
    page.screenshot(path=str(artifacts / "done-when-1-built-with-paste-and-search.png"))

    # the first tick arrives, failed: the pasted Condition reads the trigger's block
    page.locator("#tab-runs").click()
    failed = tick(monitor.id)
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".run-pill")).to_have_text("failed")
    assert failed.error_code == "TEMPLATE_UNRESOLVED"

    # fix the Condition and the value; Test step checks the Condition on that run's outputs
    select_node(page, "condition-1")
    field(page, "condition").fill(CONDITION)
    page.keyboard.press("Escape")
    select_node(page, "state-set-1")
    field(page, "value").fill(HEAD)
    page.keyboard.press("Escape")
    select_node(page, "condition-1")
    page.locator("#test-step-source").select_option(str(failed.id))
    page.locator("#btn-test-step").click()  # saves first: the step runs the saved graph
    expect(page.locator("#test-step-result")).to_contain_text("✓ Succeeded (true branch)")
    page.screenshot(path=str(artifacts / "done-when-2-test-step.png"))

    # retry the failed tick: a new run with its input, linked to it
    rows.first.click()
    page.locator("#tab-results").click()
    page.locator("#btn-retry").click()
    expect(page.locator("#run-status")).to_contain_text("Retry succeeded")
    assert cursor(monitor).value == 2  # Head counted the failed tick too
    page.screenshot(path=str(artifacts / "done-when-3-retried.png"))

    # two more ticks: three ticks in all, arriving while the page is open
    page.locator("#tab-runs").click()
    for _ in range(2):
        time.sleep(1)
        tick(monitor.id)
    expect(rows).to_have_count(4)
    expect(page.locator("#runs-list .run-trigger")).to_have_text(["schedule", "schedule", "retry", "schedule"])
    expect(card(page, "state-set-1").locator(".node-result")).to_have_text("✓ ran")
    assert cursor(monitor).value == 4
    page.screenshot(path=str(artifacts / "done-when-4-three-runs-arrived.png"))

    # restore the version saved with the pasted nodes (before the fixes)
    page.locator("#link-versions").click()
    versions = page.locator("#versions-list .version")
    pasted = versions.filter(has_text="Added State Increment, State Get, New block? and 1 more")
    expect(pasted).to_have_count(1)
    page.once("dialog", lambda dialog: dialog.accept())
    pasted.get_by_role("button", name="Restore version").click()
    expect(page.locator("#versions-status")).to_contain_text("Restored version")
    expect(versions.first).to_contain_text("Restored version")
    page.screenshot(path=str(artifacts / "done-when-5-restored.png"))
    restored = Workflow.objects.get(pk=monitor.pk)
    condition = next(n for n in restored.nodes if n["id"] == "condition-1")["data"]["config"]["condition"]
    assert "<<@trigger:Trigger.block>>" in condition

    # export, and import it again as a new workflow
    open_editor(page, monitor.id)
    with page.expect_download() as download:
        page.locator("#btn-export").click()
    path = tmp_path / "self-running-monitor.json"
    download.value.save_as(path)
    assert json.loads(path.read_text())["name"] == "Self-running monitor"
    page.locator("#import-file").set_input_files(str(path))
    page.wait_for_url(lambda url: str(monitor.id) not in url and "/builder/workflows/" in url)
    expect(page.locator(".node")).to_have_count(5)
    page.screenshot(path=str(artifacts / "done-when-6-reimported.png"))
    copy = Workflow.objects.exclude(pk__in=[monitor.pk, reference.pk]).get()
    assert copy.nodes == restored.nodes
    assert copy.edges == restored.edges

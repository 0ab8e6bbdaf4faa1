"""A run's per-node input and output, Retry of a failed run, and Test step of one node with an
earlier run's upstream outputs (a state write asked first), in the editor."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.state.store import StateScope, state_get
from tests.browser.helpers import accept_next_dialog, open_editor, result_row, select_node, show_state

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def cursor(workflow):
    return state_get(scope=StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id), key="cursor")


def test_each_node_shows_its_input_and_output(author_page, monitor, artifacts):
    run_workflow(monitor, {"block": 100})
    page = author_page
    open_editor(page, monitor.id)

    condition = result_row(page, "condition-1")
    expect(condition.locator(".result-input")).to_contain_text('"State Get"')
    expect(condition.locator(".result-input")).to_contain_text('"exists": false')
    expect(result_row(page, "trigger").locator(".result-input")).to_contain_text('"block": 100')
    expect(result_row(page, "state-set-1").locator(".result-data")).to_contain_text('"version": 1')
    page.locator("#results-pane").screenshot(path=str(artifacts / "editor-node-input-output.png"))


def test_retry_runs_a_failed_run_again_as_a_new_linked_run(author_page, monitor, artifacts):
    failed = WorkflowExecution.objects.create(
        workflow=monitor, status=WorkflowExecution.Status.ERROR, trigger=WorkflowExecution.Trigger.SCHEDULE,
        input={"block": 7}, error="Node 'State Set' (state-set-1) failed: the database was away",
        error_code="STATE_STORAGE_ERROR")
    page = author_page
    open_editor(page, monitor.id)
    expect(page.locator("#run-status")).to_have_attribute("data-execution-id", str(failed.id))
    retry = page.locator("#btn-retry")
    expect(retry).to_be_visible()

    retry.click()

    expect(page.locator("#run-status")).to_contain_text("Retry succeeded")
    expect(page.locator("#run-status")).to_contain_text(f"Retry of {str(failed.id)[:8]}")
    expect(retry).to_be_hidden()  # a succeeded run has nothing to retry
    new = monitor.executions.exclude(pk=failed.pk).get()
    assert new.retry_of_id == failed.id
    assert new.input["block"] == 7
    assert cursor(monitor).value == 7
    page.locator("#tab-runs").click()
    expect(page.locator("#runs-list .run-row").first).to_have_attribute("data-execution-id", str(new.id))
    expect(page.locator("#runs-list .run-row").first.locator(".run-trigger")).to_have_text("retry")
    page.screenshot(path=str(artifacts / "editor-retry.png"))


def test_test_step_runs_one_node_with_an_earlier_runs_outputs(author_page, monitor, artifacts):
    run_workflow(monitor, {"block": 100})
    source = run_workflow(monitor, {"block": 150})  # sees cursor 100, writes 150
    WorkflowExecution.objects.filter(pk=source.pk).update(input={"block": 170})  # as if it had seen 170
    page = author_page
    open_editor(page, monitor.id)

    # a node that writes nothing runs at once, reading the chosen run's outputs
    select_node(page, "condition-1")
    expect(page.locator("#test-step-source")).to_have_value(str(source.id))
    page.locator("#btn-test-step").click()
    expect(page.locator("#test-step-result")).to_contain_text("✓ Succeeded (true branch)")
    page.locator("#inspector").screenshot(path=str(artifacts / "editor-test-step.png"))
    assert monitor.executions.count() == 2  # not a run

    # a node that writes state says so, and asks first: declined, nothing is written
    select_node(page, "state-set-1")
    expect(page.locator("#inspector .test-step")).to_contain_text("writes to the workflow's own state")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.locator("#btn-test-step").click()
    expect(page.locator("#test-step-result")).to_contain_text("Not run: nothing was written.")
    assert cursor(monitor).value == 150

    # accepted, it writes in the workflow's own state (the source read version 1: a later write won)
    asked = accept_next_dialog(page)
    page.locator("#btn-test-step").click()
    expect(page.locator("#test-step-result")).to_contain_text("STATE_VERSION_CONFLICT")
    assert "own state" in asked[0]
    page.locator("#test-step-source").select_option("")
    accept_next_dialog(page)
    page.locator("#btn-test-step").click()
    expect(page.locator("#test-step-result")).to_contain_text("✗")  # no run: the trigger gave no block
    show_state(page)
    expect(page.locator("#state-entries")).to_contain_text("150")

"""The Settings dialog: the error workflow is picked from the organization's other workflows and
saved with the workflow; a failed Run then queues it with the failed run's summary."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow
from tests.browser.helpers import open_editor
from tests.executions.test_error_workflow import setter
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_error_workflow_is_chosen_in_settings_and_a_failed_run_queues_it(author_page, org, user, foreign_workflow,
                                                                            artifacts):
    handler = make_workflow(org, name="On error", user=user, nodes=setter("<<@trigger:Trigger.errorCode>>")[0],
                            edges=setter("x")[1])
    nodes, edges = setter("<<@trigger:Trigger.block>>")
    failing = make_workflow(org, name="Failing", user=user, nodes=nodes, edges=edges)
    page = author_page
    open_editor(page, failing.id)

    page.locator("#btn-settings").click()
    choice = page.locator("#settings-error-workflow")
    expect(choice).to_be_enabled()
    expect(choice.locator("option")).to_have_text(["None", "On error"])  # not itself, not another organization's
    choice.select_option(label="On error")
    page.locator("#settings-dialog").screenshot(path=str(artifacts / "editor-settings-error-workflow.png"))
    page.locator("#settings-save").click()

    expect(page.locator("#settings-dialog")).to_be_hidden()
    expect(page.locator("#status")).to_contain_text("Settings saved: a failed run starts On error.")
    assert Workflow.objects.get(pk=failing.pk).settings == {"errorWorkflow": str(handler.id)}

    page.locator("#run-input").fill("{}")
    page.locator("#btn-run").click()
    expect(page.locator("#run-status")).to_contain_text("Run failed")
    queued = handler.executions.get()
    assert (queued.trigger, queued.status, queued.input["errorCode"]) == ("error", "queued", "TEMPLATE_UNRESOLVED")
    assert queued.input["failedNode"]["id"] == "keep"

    # and cleared again
    page.locator("#btn-settings").click()
    expect(choice).to_have_value(str(handler.id))
    choice.select_option("")
    page.locator("#settings-save").click()
    expect(page.locator("#status")).to_contain_text("Settings saved: no error workflow.")
    assert Workflow.objects.get(pk=failing.pk).settings == {}
    assert WorkflowExecution.objects.filter(trigger="error").count() == 1

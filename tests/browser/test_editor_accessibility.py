"""axe-core (from frontend/'s devDependencies, tests/browser/axe.py) finds no serious or critical violation
on the pages issue 23 added or changed: the list, the editor with a node selected and with a run
open (its input and output, Retry, Test step), the secrets, tokens and versions pages, and the
shortcuts dialog."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.workflows.services import workflow_update
from tests.browser.axe import axe_violations
from tests.browser.conftest import log_in
from tests.browser.helpers import card, open_editor
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def a11y_page(browser, live_server, user):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1440, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    log_in(page, "alice", "pw-alice")
    yield page
    context.close()


def test_the_list_with_live_times(a11y_page, monitor):
    run_workflow(monitor, {"block": 1})
    a11y_page.goto("/builder/")

    assert axe_violations(a11y_page) == []


def test_the_editor_with_a_node_selected_and_a_failed_run_open(a11y_page, monitor, artifacts):
    run_workflow(monitor, {"block": 1})
    WorkflowExecution.objects.create(workflow=monitor, status=WorkflowExecution.Status.ERROR, input={"block": 2},
                                     error="failed", error_code="HTTP_TIMEOUT")
    page = a11y_page
    open_editor(page, monitor.id)
    expect(page.locator("#btn-retry")).to_be_visible()  # the failed run is open, with Retry
    assert axe_violations(page) == []

    card(page, "condition-1").locator(".node-head").click()
    page.wait_for_selector('#inspector .node-panel[data-node-id="condition-1"] .config-form')
    page.locator("#btn-test-step").click()
    expect(page.locator("#test-step-result")).not_to_be_empty()
    page.locator("#tab-runs").click()
    expect(page.locator("#runs-list .run-row")).to_have_count(2)
    assert axe_violations(page) == []

    page.locator("#tab-results").click()
    page.locator("#runs-list, #run-results").first.wait_for(state="attached")
    page.locator("#btn-shortcuts").click()
    expect(page.locator("#shortcuts")).to_be_visible()
    assert axe_violations(page) == []


def test_the_secrets_tokens_and_versions_pages(a11y_page, org, user):
    workflow = workflow_update(make_workflow(org, name="Versioned", user=user), name="Versioned 2", user=user)
    page = a11y_page
    for path in ("/builder/secrets/", "/builder/tokens/", f"/builder/workflows/{workflow.id}/versions/"):
        page.goto(path)
        page.wait_for_load_state("networkidle")
        assert axe_violations(page) == [], path
    page.goto(f"/builder/workflows/{workflow.id}/versions/")
    expect(page.locator("#versions-list .version")).to_have_count(2)
    page.locator("#versions-list summary").first.click()
    assert axe_violations(page) == []

    page.goto("/builder/tokens/")
    page.locator("#token-name").fill("ci")
    page.get_by_role("button", name="Make token").click()
    expect(page.locator("#token-value")).not_to_be_empty()
    assert axe_violations(page) == []

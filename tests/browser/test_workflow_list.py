"""The workflow list: rename, duplicate (empty state), soft-delete with confirmation, last run."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.models import Workflow
from tests.browser.helpers import accept_next_dialog, log_in_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def row(page, name):
    return page.locator(f'#workflow-table tbody tr[data-workflow-name="{name}"]')


def test_rename_from_the_list(author_page, monitor):
    page = author_page
    page.goto("/builder/")

    page.get_by_role("button", name="Rename Block monitor").click()
    name = page.get_by_label("New name of Block monitor")
    expect(name).to_be_focused()
    name.fill("Cursor monitor")
    name.press("Enter")

    expect(page.get_by_role("link", name="Cursor monitor", exact=True)).to_be_visible()
    expect(page.locator("#list-status")).to_have_text("Renamed “Block monitor” to “Cursor monitor”.")
    monitor.refresh_from_db()
    assert monitor.name == "Cursor monitor"


def test_an_empty_name_is_refused_with_a_message(author_page, monitor):
    page = author_page
    page.goto("/builder/")
    page.get_by_role("button", name="Rename Block monitor").click()
    page.get_by_label("New name of Block monitor").fill("   ")
    page.get_by_role("button", name="Save").click()

    expect(row(page, "Block monitor").locator(".rename-error")).to_have_text("This field may not be blank.")
    monitor.refresh_from_db()
    assert monitor.name == "Block monitor"


def test_duplicate_makes_a_copy_with_empty_state(author_page, monitor):
    run_workflow(monitor, {"block": 100})
    page = author_page
    page.goto("/builder/")

    page.get_by_role("button", name="Duplicate Block monitor").click()

    copy_row = row(page, "Block monitor (copy)")
    expect(copy_row).to_be_visible()
    expect(copy_row).to_contain_text("new copy")
    expect(copy_row).to_contain_text("never run")
    expect(row(page, "Block monitor")).to_contain_text("success")
    copy = Workflow.objects.get(name="Block monitor (copy)")
    assert copy.nodes == monitor.nodes
    assert not WorkflowState.objects.filter(workflow=copy).exists()


def test_delete_asks_first_and_hides_the_workflow(author_page, monitor):
    page = author_page
    page.goto("/builder/")

    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Delete Block monitor").click()
    expect(row(page, "Block monitor")).to_have_count(1)
    monitor.refresh_from_db()
    assert monitor.deleted_at is None

    asked = accept_next_dialog(page)
    page.get_by_role("button", name="Delete Block monitor").click()

    expect(row(page, "Block monitor")).to_have_count(0)
    expect(page.locator("#list-status")).to_have_text("Deleted “Block monitor”.")
    assert "Its state is kept" in asked[0]
    monitor.refresh_from_db()
    assert monitor.deleted_at is not None


def test_the_header_links_the_api_docs_and_admin_for_staff(page, user, monitor, artifacts):
    log_in_as(page, "alice")
    expect(page.get_by_role("link", name="API docs")).to_have_attribute("href", "/api/docs/")
    expect(page.get_by_role("link", name="Admin")).to_have_count(0)
    page.screenshot(path=str(artifacts / "workflow-list.png"))

    user.is_staff = True
    user.save()
    page.reload()

    expect(page.get_by_role("link", name="Admin")).to_have_attribute("href", "/admin/")

"""The active switch, next run and webhook address, in the list and in the editor."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.workflows.services import workflow_create
from tests.browser.helpers import open_editor, select_node
from tests.executions.graphs import counter_graph

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scheduled(org, user):
    nodes, edges = counter_graph("Schedule", interval=3600)
    return workflow_create(organization=org, user=user, name="Hourly", nodes=nodes, edges=edges)


@pytest.fixture
def hooked(org, user):
    nodes, edges = counter_graph("Webhook", sampleInput={"block": 1})
    return workflow_create(organization=org, user=user, name="Hooked", nodes=nodes, edges=edges)


def test_the_list_switches_a_schedule_on_and_shows_its_next_run(author_page, scheduled):
    page = author_page
    page.goto("/builder/")
    row = page.locator(f'tr[data-workflow-id="{scheduled.id}"]')
    expect(row.locator(".next-run")).to_have_text("—")

    row.get_by_role("switch").check()

    expect(row.locator(".switch-text")).to_have_text("On")
    expect(page.locator("#list-status")).to_contain_text("“Hourly” is active")
    expect(row.locator(".next-run")).not_to_have_text("—")
    scheduled.refresh_from_db()
    assert scheduled.active
    assert scheduled.next_run_at is not None

    page.reload()
    expect(row.locator(".next-run")).to_contain_text("in ")


def test_the_editor_switches_active_and_shows_the_webhook_to_call(author_page, hooked):
    page = author_page
    open_editor(page, hooked.id)
    expect(page.locator("#next-run")).to_have_text("Off: the webhook trigger does not fire.")

    page.locator("#active-switch").check()

    expect(page.locator("#next-run")).to_have_text("On: the webhook runs it.")
    hooked.refresh_from_db()
    assert hooked.active
    select_node(page, "trigger")
    box = page.locator("#inspector .webhook-info")
    expect(box.locator(".webhook-url")).to_have_text(f"{page.url.split('/builder/')[0]}/hooks/{hooked.id}/")
    expect(box.locator(".webhook-secret")).to_have_text(hooked.webhook_secret)
    curl = box.locator(".webhook-curl")
    expect(curl).to_contain_text(f"curl -X POST '{page.url.split('/builder/')[0]}/hooks/{hooked.id}/?wait=10'")
    expect(curl).to_contain_text(f"X-KeeperState-Secret: {hooked.webhook_secret}")

"""Django admin in the browser: the state list fits a 1280 px window, and axe finds nothing serious."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin_page(browser, live_server):
    get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("pw-root")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/admin/")
    yield page
    context.close()


def test_the_state_list_fits_1280_px_without_horizontal_scroll(admin_page, org, monitor, artifacts):
    run_workflow(monitor, {"block": 100})
    other = make_workflow(org, name="A workflow with a rather long name for its monitor of many things")
    WorkflowState.objects.create(organization=org, workflow=other, key="a-long-key-name-for-an-alert-payload",
                                 value={"message": "x" * 600, "items": list(range(50))},
                                 expires_at=timezone.now() + timedelta(minutes=5))
    WorkflowState.objects.create(organization=org, workflow=other, key="old", value=1,
                                 expires_at=timezone.now() - timedelta(hours=2))
    page = admin_page

    page.goto("/admin/keeperstate/workflowstate/")

    page.screenshot(path=str(artifacts / "admin-state-list.png"), full_page=True)
    expect(page.locator("#site-name")).to_have_text("KeeperState administration")
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    expect(page.locator("#result_list")).to_contain_text("expires in 5 min")
    expect(page.locator("#result_list")).to_contain_text("expired 2 h ago")
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"
    table = page.eval_on_selector(".results", "r => [r.scrollWidth, r.clientWidth]")
    assert table[0] <= table[1], f"the state list scrolls sideways: {table}"

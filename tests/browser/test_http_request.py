"""An author builds an HTTP Request node in the editor: URL, a header row whose value picks an
organization secret through @, and runs it against a real local server; the run shows the
answer with the secret redacted. Also: the demo Block monitor's State panel after it advanced."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from keeperstate.accounts.models import Membership
from keeperstate.demo import feed as demo_feed
from keeperstate.demo.seeding import ensure_demo
from keeperstate.secrets.store import secret_put
from keeperstate.workflows.models import Workflow
from tests.browser.helpers import (
    add_from_palette,
    create_workflow,
    field,
    menu,
    open_editor,
    result_row,
    run,
    save,
    select_node,
    show_state,
    state_row,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SECRET = "sk-live-4f9a8b7c6d5e"
TOKEN = "<<@__secrets:Secrets.API_KEY>>"


def test_author_builds_an_http_request_with_a_secret_header(author_page, org, allow_server, artifacts):
    page = author_page
    secret_put(organization=org, name="API_KEY", value=SECRET)
    create_workflow(page, "Call an API")

    # HTTP Request after the trigger
    select_node(page, "trigger")
    add_from_palette(page, "HTTP Request", "http-request-1")
    field(page, "url").fill(f"{allow_server.url}/echo")
    field(page, "url").blur()

    # a header row: the name, then the value with the secret picked from the @ list
    rows = page.locator('#inspector .pairs[data-pairs-for="headers"] .pair-row')
    expect(rows).to_have_count(1)
    rows.nth(0).locator(".pair-name").fill("Authorization")
    value = rows.nth(0).locator(".pair-value")
    value.click()
    value.press_sequentially("Bearer ")
    value.press_sequentially("@API")
    option = menu(page).locator(f'.ref-option[data-token="{TOKEN}"]')
    expect(option).to_be_visible()
    expect(menu(page)).to_contain_text("organization, value hidden")
    expect(menu(page)).not_to_contain_text(SECRET)
    value.press("Enter")
    expect(value).to_have_value(f"Bearer {TOKEN}")
    badge = page.locator('#inspector .ref-badges[data-badges-for="headers"] .ref-badge')
    expect(badge).to_contain_text("API_KEY")
    page.locator("#inspector").screenshot(path=str(artifacts / "http-request-form.png"))

    # a query row too, then save and run
    query_row = page.locator('#inspector .pairs[data-pairs-for="query"] .pair-row').nth(0)
    query_row.locator(".pair-name").fill("from")
    query_row.locator(".pair-value").fill("19000000")
    save(page)
    run(page, "{}")

    # then: the server received the secret; the editor shows it as ••••
    row = result_row(page, "http-request-1")
    expect(row).to_contain_text("200")
    expect(page.locator("#run-results")).not_to_contain_text(SECRET)
    page.screenshot(path=str(artifacts / "http-request-run.png"))
    workflow = Workflow.objects.get(name="Call an API")
    node = next(n for n in workflow.nodes if n["id"] == "http-request-1")
    assert node["data"]["config"]["headers"] == {"Authorization": f"Bearer {TOKEN}"}
    assert node["data"]["config"]["query"] == {"from": "19000000"}
    execution = workflow.executions.get()
    echoed = execution.node_results["http-request-1"]["data"]["body"]
    assert echoed["headers"]["authorization"] == "Bearer ••••"
    assert echoed["query"] == {"from": "19000000"}


def test_demo_monitor_state_panel_after_the_feed_advanced(page, live_server, settings, monkeypatch, artifacts):
    # given the demo, served by this live server and allowed to call it (what serve does)
    settings.KEEPERSTATE_HTTP_ALLOW = [live_server.url.removeprefix("http://")]
    org, user, workflow = ensure_demo(password="pw-demo", base_url=live_server.url)
    assert Membership.objects.filter(user=user, organization=org).exists()
    at = [demo_feed.GENESIS + 2_000_000 * 5]
    monkeypatch.setattr(demo_feed, "now", lambda: at[0])
    from tests.browser.conftest import log_in

    log_in(page, "demo", "pw-demo")
    open_editor(page, workflow.id)

    # when it runs, the feed moves on, and it runs again
    run(page, "{}")
    at[0] += 5 * demo_feed.block_seconds()
    run(page, "{}")

    # then the cursor advanced by compare-and-set, and every block was alerted once:
    # the head on the first run, then each of the five mined since
    expect(result_row(page, "send-alert")).to_be_visible()
    show_state(page)
    expect(state_row(page, "cursor")).to_contain_text(str(demo_feed.current_block()))
    page.screenshot(path=str(artifacts / "demo-monitor-state.png"))
    page.goto("/demo/alerts/")
    expect(page.locator("#alert-list tbody tr")).to_have_count(1 + 5)
    page.screenshot(path=str(artifacts / "demo-alerts.png"))

"""Charts in real Chromium, from known data: what each chart drew (its data-drawn and its table of
numbers) equals what the API answers; a click on a bucket lists its runs; gauges show the budget;
axe finds nothing serious on the pages with charts. Screenshots under artifacts/."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from keeperstate.core.buckets import RANGES, window
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from tests.api.test_execution_stats import seed
from tests.browser.axe import AXE_SOURCE, BLOCKING, axe_violations
from tests.browser.conftest import log_in
from tests.browser.helpers import open_editor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
Status = WorkflowExecution.Status
STATUSES = ["success", "error", "interrupted", "skipped"]


@pytest.fixture
def seeded_bucket(monitor):
    """In the 24 h chart's last bucket but one: 3 successes (100, 200, 300 ms), 2 errors (1000,
    2000 ms), 1 interrupted, 1 skipped; and 2 successes (50 ms) the bucket before."""
    start, _ = window(RANGES["24h"])
    bucket = start + 22 * RANGES["24h"].step
    at = bucket + timedelta(minutes=10)
    for ms in (100, 200, 300):
        seed(monitor, at, Status.SUCCESS, ms)
    for ms in (1000, 2000):
        seed(monitor, at, Status.ERROR, ms)
    seed(monitor, at, Status.INTERRUPTED)
    seed(monitor, at, Status.SKIPPED, started=False)
    for _ in range(2):
        seed(monitor, bucket - timedelta(minutes=20), Status.SUCCESS, 50)
    return bucket


def drawn(page, selector):
    return json.loads(page.locator(selector).get_attribute("data-drawn"))


def api_json(page, url):
    response = page.request.get(url)
    assert response.ok, response.text()
    return response.json()


def no_serious_violations(browser, live_server, url, prepare=None, username="alice", within=None):
    """axe on ``url`` in a context that bypasses the CSP (to inject axe-core), after ``prepare``;
    ``within``: only that part of the page (a selector)."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1440, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        if username == "root":
            page.goto("/admin/login/")
            page.get_by_label("Username").fill("root")
            page.get_by_label("Password").fill("pw-root")
            page.get_by_role("button", name="Log in").click()
            page.wait_for_url("**/admin/")
        else:
            log_in(page, username, f"pw-{username}")
        page.goto(url)
        if prepare:
            prepare(page)
        if within is None:
            return axe_violations(page)
        page.add_script_tag(content=AXE_SOURCE.read_text(encoding="utf-8"))
        result = page.evaluate(
            "async (s) => await axe.run({include: [s]}, {resultTypes: ['violations']})", within
        )
        return [(v["id"], v["impact"]) for v in result["violations"] if v["impact"] in BLOCKING]
    finally:
        context.close()


def show_runs_charts(page):
    page.wait_for_selector("body[data-editor-ready]")
    page.locator("#tab-runs").click()
    page.wait_for_selector("#runs-charts[data-ready] figure[data-chart=runs]")


def test_the_runs_chart_draws_the_apis_numbers_and_a_click_lists_a_buckets_runs(
    author_page, monitor, seeded_bucket, artifacts, browser, live_server
):
    page = author_page
    open_editor(page, monitor.id)
    show_runs_charts(page)
    stats = api_json(page, f"/api/workflows/{monitor.id}/executions/stats/?range=24h")

    # then: each status's bars are the API's counts, bucket by bucket
    runs = drawn(page, "figure[data-chart=runs]")
    assert runs["buckets"] == [b["start"] for b in stats["buckets"]]
    assert {d["key"]: d["data"] for d in runs["datasets"]} == {
        s: [b[s] for b in stats["buckets"]] for s in STATUSES
    }
    assert runs["datasets"][1]["data"][22] == 2  # the two errors
    expect(page.locator("figure[data-chart=runs] .chart-summary")).to_contain_text("9 runs in the last 24 hours")
    # and the durations are the API's p50 and p95
    durations = drawn(page, "figure[data-chart=durations]")
    assert [d["data"] for d in durations["datasets"]] == [
        [b["p50Ms"] for b in stats["buckets"]], [b["p95Ms"] for b in stats["buckets"]],
    ]
    assert durations["datasets"][0]["data"][22] == 300.0  # median of 100, 200, 300, 1000, 2000 ms
    page.screenshot(path=str(artifacts / "charts-editor-runs.png"))

    # the numbers behind the toggle: the seeded bucket's row
    toggle = page.locator("figure[data-chart=runs] .chart-toggle")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    row = page.locator("figure[data-chart=runs] .chart-table tbody tr").nth(22)
    expect(row.locator("td")).to_have_text([row.locator("td").first.inner_text(), "3", "2", "1", "1", "7", "Show runs"])
    page.locator("figure[data-chart=durations] .chart-toggle").click()
    durations_row = page.locator("figure[data-chart=durations] .chart-table tbody tr").nth(22)
    expect(durations_row.locator("td").nth(2)).to_have_text("300 ms")
    page.screenshot(path=str(artifacts / "charts-editor-runs-numbers.png"))

    # when: a click on the seeded bucket's bar
    point = page.evaluate(
        """() => { const c = Chart.getChart(document.querySelector('figure[data-chart=runs] canvas'));
                   const bar = c.getDatasetMeta(0).data[22]; return {x: bar.x, y: bar.y + 2}; }"""
    )
    page.locator("figure[data-chart=runs] canvas").click(position=point)
    # then: the runs list holds that bucket's seven runs only
    expect(page.locator("#runs-filter")).to_be_visible()
    expect(page.locator("#runs-filter")).to_have_attribute("data-bucket", stats["buckets"][22]["start"])
    expect(page.locator("#runs-list .run-row")).to_have_count(7)
    page.screenshot(path=str(artifacts / "charts-editor-runs-bucket.png"))
    page.locator("#runs-pane").screenshot(path=str(artifacts / "charts-editor-runs-pane.png"))
    page.locator("#runs-filter button").click()
    expect(page.locator("#runs-list .run-row")).to_have_count(9)
    # and the keyboard way: the table's Show runs button of the bucket before
    page.locator("figure[data-chart=runs] .chart-table tbody tr").nth(21).get_by_role("button").click()
    expect(page.locator("#runs-list .run-row")).to_have_count(2)

    # the 1-hour range: its 30 buckets, as the API counts them
    page.locator("#runs-charts [data-range='1h']").click()
    expect(page.locator("figure[data-chart=runs] .chart-summary")).to_contain_text("in the last hour")
    hour = api_json(page, f"/api/workflows/{monitor.id}/executions/stats/?range=1h")
    drawn_hour = drawn(page, "figure[data-chart=runs]")
    assert len(drawn_hour["labels"]) == 30
    assert {d["key"]: d["data"] for d in drawn_hour["datasets"]} == {
        s: [b[s] for b in hour["buckets"]] for s in STATUSES
    }

    def open_runs(p):
        show_runs_charts(p)
        p.locator("figure[data-chart=runs] .chart-toggle").click()

    assert no_serious_violations(browser, live_server, f"/builder/workflows/{monitor.id}/", open_runs) == []


def test_the_state_panel_charts_a_numeric_key_with_each_writes_run_and_gauges_the_budget(
    author_page, monitor, artifacts, browser, live_server
):
    # given a cursor written at blocks 100, 101 and 105 by three runs
    runs = [run_workflow(monitor, {"block": block}) for block in (100, 101, 105)]
    page = author_page
    open_editor(page, monitor.id)
    page.locator("#tab-state").click()
    entry = page.locator('details.state-entry[data-state-key="cursor"]')
    entry.locator("summary").click()
    page.wait_for_selector("details.state-entry figure[data-chart=key]")
    series = api_json(page, f"/api/workflows/{monitor.id}/state-chart/?key=cursor")

    # then: the drawn values and runs are the history's
    key = drawn(page, "figure[data-chart=key]")
    assert key["values"] == [p["value"] for p in series["points"]] == [100, 101, 105]
    assert key["executions"] == [str(r.id) for r in runs]
    entry.locator(".chart-toggle").click()
    rows = entry.locator(".chart-table tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(2).locator("td").nth(1)).to_have_text("105")
    expect(rows.nth(2).locator("td").nth(4)).to_have_text(f"run {str(runs[2].id)[:8]}")

    # and the gauges: this workflow's keys and the organization's keys and bytes
    state = api_json(page, f"/api/workflows/{monitor.id}/state-summary/")
    gauges = page.locator("#state-gauges .gauge")
    expect(gauges).to_have_count(3)
    values = {g.get_attribute("data-gauge"): (int(g.get_attribute("data-value")), int(g.get_attribute("data-max")))
              for g in gauges.all()}
    assert values == {
        "workflow-keys": (len(state["entries"]), state["limits"]["keysPerWorkflow"]),
        "org-keys": (state["usage"]["liveKeys"], state["usage"]["maxKeys"]),
        "org-bytes": (state["usage"]["storedBytes"], state["usage"]["maxBytes"]),
    }
    ceiling = settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW
    expect(gauges.nth(0).locator(".gauge-text")).to_have_text(f"1 of {ceiling:,} ({100 / ceiling:.1f} %)")
    page.screenshot(path=str(artifacts / "charts-state-panel.png"))
    page.locator("#state-panel").screenshot(path=str(artifacts / "charts-state-panel-pane.png"))

    def open_key(p):
        p.wait_for_selector("body[data-editor-ready]")
        p.locator("#tab-state").click()
        p.locator('details.state-entry[data-state-key="cursor"] summary').click()
        p.wait_for_selector("figure[data-chart=key]")
        p.locator("figure[data-chart=key] .chart-toggle").click()

    assert no_serious_violations(browser, live_server, f"/builder/workflows/{monitor.id}/", open_key) == []


def test_a_key_of_other_values_is_charted_as_writes_per_bucket(author_page, workflow):
    from keeperstate.state.store import StateScope, state_set

    scope = StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)
    for value in ("a", "b", {"c": 1}):
        state_set(scope=scope, key="note", value=value)
    page = author_page
    open_editor(page, workflow.id)
    page.locator("#tab-state").click()
    page.locator('details.state-entry[data-state-key="note"] summary').click()
    page.wait_for_selector("figure[data-chart=writes]")
    series = api_json(page, f"/api/workflows/{workflow.id}/state-chart/?key=note")
    writes = drawn(page, "figure[data-chart=writes]")
    assert writes["datasets"][0]["data"] == [b["writes"] for b in series["buckets"]]
    assert sum(writes["datasets"][0]["data"]) == 3


def test_the_workflow_list_draws_a_small_runs_chart_per_workflow(
    author_page, monitor, seeded_bucket, artifacts, browser, live_server
):
    page = author_page
    page.goto("/builder/")
    figure = page.locator(f'[data-workflow-id="{monitor.id}"] figure[data-chart=runs]')
    expect(figure).to_be_visible()
    stats = api_json(page, f"/api/workflows/{monitor.id}/executions/stats/?range=24h")
    mini = json.loads(figure.get_attribute("data-drawn"))
    assert {d["key"]: d["data"] for d in mini["datasets"]} == {s: [b[s] for b in stats["buckets"]] for s in STATUSES}
    expect(figure.locator(".chart-summary")).to_contain_text("9 runs in the last 24 hours")
    figure.locator(".chart-toggle").click()
    expect(figure.locator(".chart-table tbody tr").nth(22).locator("td").nth(5)).to_have_text("7")
    page.screenshot(path=str(artifacts / "charts-workflow-list.png"), full_page=True)

    def open_numbers(p):
        p.locator("figure[data-chart=runs] .chart-toggle").first.click()

    assert no_serious_violations(browser, live_server, "/builder/", open_numbers) == []


def test_admin_charts_the_key_and_gauges_the_budgets(page, monitor, artifacts, browser, live_server):
    get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    runs = [run_workflow(monitor, {"block": block}) for block in (7, 8, 12)]
    row = WorkflowState.objects.get(workflow=monitor, key="cursor")
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("pw-root")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/admin/")

    # the state page: the key's chart and three gauges
    url = f"/admin/keeperstate/workflowstate/{row.pk}/change/"
    page.goto(url)
    key = json.loads(page.locator("figure[data-chart=key]").get_attribute("data-drawn"))
    assert key["values"] == [7, 8, 12]
    assert key["executions"] == [str(r.id) for r in runs]
    expect(page.locator(".gauges .gauge")).to_have_count(3)
    expect(page.locator('.gauge[data-gauge="org-keys"] .gauge-text')).to_have_text(
        f"1 of {settings.KEEPERSTATE_ORG_MAX_KEYS:,} (0.01 %)"
    )
    page.screenshot(path=str(artifacts / "charts-admin-state.png"), full_page=True)
    assert no_serious_violations(browser, live_server, url, username="root") == []

    # the organization's page: its keys and bytes
    org_url = f"/admin/keeperstate/organization/{monitor.organization_id}/change/"
    page.goto(org_url)
    expect(page.locator(".gauges .gauge")).to_have_count(2)
    expect(page.locator('.gauge[data-gauge="org-bytes"]')).to_have_attribute("data-value", str(row.size_bytes))
    page.screenshot(path=str(artifacts / "charts-admin-organization.png"), full_page=True)
    # (only the gauges: Django's membership inline has unlabelled inputs of its own, outside this issue)
    assert no_serious_violations(browser, live_server, org_url, username="root", within=".field-state_usage") == []

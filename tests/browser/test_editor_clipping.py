"""Nothing the editor says is cut at 1280×800: the status line reads whole; the state gauges'
numbers, the State panel's column names and the run-duration axis labels are neither cut nor
overlapping; the workflow list's table stays inside its card; Versions is a button like its
neighbours, and "What changed" names each changed field, old → new."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from keeperstate.core.buckets import RANGES, window
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from tests.api.test_execution_stats import seed
from tests.browser.conftest import CHROMIUM_ARGS, log_in  # noqa: F401 - the page runs under the suite's Chromium
from tests.browser.helpers import field, open_editor, save, select_node
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Whether an element shows all of its text: nothing cut by its own box.
WHOLE = "e => e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1"


@pytest.fixture
def small_page(browser, live_server, user):
    """Alice at 1280×800, the size the walkthrough found the clipping at."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, "alice", "pw-alice")
    yield page
    context.close()
    assert errors == []


def inside(inner, outer):
    return inner["x"] >= outer["x"] - 0.5 and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 0.5


def test_the_status_line_reads_whole(small_page, monitor, artifacts):
    page = small_page
    run_workflow(monitor, {"block": 1})
    open_editor(page, monitor.id)
    page.locator("#tab-runs").click()

    page.locator("#runs-list .run-row").first.click()  # "Showing the run … on the canvas."
    status = page.locator("#status")
    expect(status).to_contain_text("Showing the run")
    assert status.evaluate(WHOLE)
    assert status.bounding_box()["width"] > 250
    select_node(page, "condition-1")
    page.keyboard.press("Delete")  # the longest message there is: reconnect, references, undo
    expect(status).to_contain_text("Ctrl+Z brings it back")
    assert status.evaluate(WHOLE)
    page.screenshot(path=str(artifacts / "editor-status-line-1280.png"))


def test_the_state_panels_gauges_and_column_names_are_whole(small_page, monitor, artifacts):
    run_workflow(monitor, {"block": 1})
    page = small_page
    open_editor(page, monitor.id)
    page.locator("#tab-state").click()
    gauges = page.locator("#state-gauges .gauge-text")
    expect(gauges).to_have_count(3)
    expect(gauges.first).to_have_text("1 of 100 (1.0 %)")

    panel = page.locator("#state-panel").bounding_box()
    for i in range(3):
        assert gauges.nth(i).evaluate(WHOLE), gauges.nth(i).text_content()
        assert inside(gauges.nth(i).bounding_box(), panel)
    columns = page.locator("#state-entries .state-columns > span")
    expect(columns).to_have_count(5)
    for i in range(5):
        assert columns.nth(i).evaluate(WHOLE), columns.nth(i).text_content()
    page.locator("#state-panel").screenshot(path=str(artifacts / "editor-state-gauges-1280.png"))


# The x axis's tick labels as drawn: each one's left and right edge, in canvas pixels.
LABEL_EDGES = """canvas => {
  const chart = Chart.getChart(canvas);
  const scale = chart.scales.x;
  const ctx = chart.ctx;
  ctx.save();
  ctx.font = Chart.helpers.toFont(scale.options.ticks.font).string;
  const edges = scale.getLabelItems().map((item) => {
    const width = ctx.measureText(String(item.label)).width;
    const x = item.options.translation[0];
    const left = item.options.textAlign === "left" ? x : item.options.textAlign === "right" ? x - width : x - width / 2;
    return [left, left + width];
  });
  ctx.restore();
  return edges;
}"""


def test_the_run_duration_axis_labels_do_not_overlap(small_page, monitor, artifacts):
    start, _ = window(RANGES["24h"])
    for i in range(24):
        seed(monitor, start + i * RANGES["24h"].step + timedelta(minutes=5), WorkflowExecution.Status.SUCCESS,
             100 + i * 937)
    page = small_page
    open_editor(page, monitor.id)
    page.locator("#tab-runs").click()
    page.wait_for_selector("#runs-charts[data-ready]")

    for kind in ("durations", "runs"):
        edges = page.locator(f'#runs-charts figure[data-chart="{kind}"] canvas').evaluate(LABEL_EDGES)
        assert len(edges) >= 3
        for (_, right), (left, _) in itertools.pairwise(edges):
            assert left - right >= 4, f"{kind}: labels {edges} touch or overlap"
    page.locator("#runs-charts").screenshot(path=str(artifacts / "editor-run-charts-1280.png"))


def test_the_workflow_list_stays_inside_its_card(small_page, org, user, monitor, artifacts):
    for name in ("A workflow with a rather long name to show", "Another one"):
        make_workflow(org, name=name, user=user)
    page = small_page
    page.goto("/builder/")

    table = page.locator("#workflow-table")
    card = page.locator("section.card", has=table)
    assert inside(table.bounding_box(), card.bounding_box())
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(artifacts / "workflow-list-1280.png"), full_page=True)


def test_versions_is_a_button_like_its_neighbours_and_what_changed_names_each_field(small_page, monitor, artifacts):
    page = small_page
    open_editor(page, monitor.id)
    versions = page.locator("#link-versions").bounding_box()
    export = page.locator("#btn-export").bounding_box()
    assert abs(versions["height"] - export["height"]) <= 1
    assert abs((versions["y"] + versions["height"] / 2) - (export["y"] + export["height"] / 2)) <= 1
    background = page.locator("#link-versions").evaluate("e => getComputedStyle(e).backgroundColor")
    assert background == page.locator("#btn-export").evaluate("e => getComputedStyle(e).backgroundColor")

    select_node(page, "state-get-1")
    field(page, "key").fill("head")
    save(page)
    page.locator("#link-versions").click()
    newest = page.locator("#versions-list .version").first
    newest.locator(".version-diff summary").click()
    change = newest.locator('.diff-field[data-field="config.key"]')
    expect(change).to_have_text("config.key: cursor → head")
    newest.screenshot(path=str(artifacts / "versions-what-changed.png"))

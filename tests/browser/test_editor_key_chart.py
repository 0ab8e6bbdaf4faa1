"""The State panel's chart of a numeric key covers its whole range: the store keeps a key's
newest changes only (here 2), and what the runs read of the key over the last 24 hours is drawn
with them, so a per-block cursor shows more than its last few minutes."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from playwright.sync_api import expect

from keeperstate.executions.service import run_workflow
from keeperstate.state.maintenance import HISTORY_SETTING_SQL
from tests.browser.helpers import open_editor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def short_history(settings):
    settings.KEEPERSTATE_HISTORY_PER_KEY = 2
    with connection.cursor() as cursor:
        cursor.execute(HISTORY_SETTING_SQL, {"value": 2})


def test_a_cursors_chart_covers_the_range_beyond_the_kept_history(author_page, monitor, short_history, artifacts):
    for block in (100, 101, 102, 103, 104):
        run_workflow(monitor, {"block": block})
    page = author_page
    open_editor(page, monitor.id)
    page.locator("#tab-state").click()
    entry = page.locator('details.state-entry[data-state-key="cursor"]')
    entry.locator("summary").click()
    figure = entry.locator("figure[data-chart=key]")
    expect(figure).to_be_visible()

    drawn = json.loads(figure.get_attribute("data-drawn"))
    assert drawn["values"] == [103, 104]  # the two changes the store keeps
    assert sum(bucket["reads"] for bucket in drawn["runs"]) == 4  # and every run that read a cursor
    expect(figure.locator(".chart-summary")).to_contain_text(
        "Over the last 24 hours, 4 runs read it: lowest 100, highest 103, last 103.")
    entry.screenshot(path=str(artifacts / "editor-key-chart-range.png"))

"""The Runs tab is live: runs arrive at the top without a reload, the shown run's marks follow it
to its end, "Next run" counts down and moves on, and older runs page in under the API's filters."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.workflows.models import Workflow
from tests.browser.helpers import card, open_editor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Status, Trigger = WorkflowExecution.Status, WorkflowExecution.Trigger


def test_new_runs_appear_at_the_top_without_a_reload(author_page, monitor, artifacts):
    first = run_workflow(monitor, {"block": 100})
    page = author_page
    open_editor(page, monitor.id)
    page.locator("#tab-runs").click()
    rows = page.locator("#runs-list .run-row")
    expect(rows).to_have_count(1)

    # when two runs happen elsewhere (the API, a schedule) while the editor is open
    second = run_workflow(monitor, {"block": 101}, trigger=Trigger.API)
    third = run_workflow(monitor, {"block": 102}, trigger=Trigger.SCHEDULE)

    # then they arrive, newest on top, and the canvas follows the newest
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-execution-id") for i in range(3)] == [
        str(third.id), str(second.id), str(first.id)]
    expect(page.locator("#runs-tab-count")).to_have_text("(3)")
    expect(page.locator("#run-status")).to_have_attribute("data-execution-id", str(third.id))
    expect(rows.nth(0).locator(".run-when")).to_have_text(re.compile(r"^(now|\d+ s ago)$"))
    page.screenshot(path=str(artifacts / "editor-live-runs.png"))


def test_the_shown_runs_marks_update_when_it_finishes(author_page, monitor):
    done = run_workflow(monitor, {"block": 100})
    running = WorkflowExecution.objects.create(workflow=monitor, status=Status.RUNNING, trigger=Trigger.SCHEDULE,
                                               input={"block": 200}, started_at=timezone.now())
    page = author_page
    open_editor(page, monitor.id)
    expect(page.locator("#run-status")).to_have_attribute("data-execution-id", str(running.id))
    expect(page.locator("#run-status")).to_contain_text("running")
    expect(card(page, "state-set-1").locator(".node-result")).to_have_count(0)

    # when the run finishes (its results as a finished run of the same graph)
    WorkflowExecution.objects.filter(pk=running.pk).update(
        status=Status.SUCCESS, node_results=done.node_results, finished_at=timezone.now())

    # then its marks appear without a reload
    expect(page.locator("#run-status")).to_contain_text("succeeded")
    expect(card(page, "state-set-1").locator(".node-result")).to_have_text("✓ ran")


def test_next_run_counts_down_in_seconds_and_moves_on(author_page, monitor):
    Workflow.objects.filter(pk=monitor.pk).update(active=True, next_run_at=timezone.now() + timedelta(seconds=3))
    page = author_page
    open_editor(page, monitor.id)
    expect(page.locator("#next-run")).to_have_text(re.compile(r"^Next run in [1-3] s$"))

    # when the schedule moves on (the scheduler set the next tick)
    Workflow.objects.filter(pk=monitor.pk).update(next_run_at=timezone.now() + timedelta(seconds=50))

    # then once the shown time has passed the editor reads the new one
    expect(page.locator("#next-run")).to_have_text(re.compile(r"^Next run in 4\d s$"), timeout=15_000)


def test_older_runs_page_in_and_filters_narrow_the_list(author_page, monitor, artifacts):
    now = timezone.now()
    for i in range(25):
        WorkflowExecution.objects.create(
            workflow=monitor, status=Status.ERROR if i % 5 == 0 else Status.SUCCESS,
            trigger=Trigger.WEBHOOK if i == 3 else Trigger.SCHEDULE,
            queued_at=now - timedelta(minutes=30 - i), started_at=now - timedelta(minutes=30 - i),
            finished_at=now - timedelta(minutes=30 - i))
    page = author_page
    open_editor(page, monitor.id)
    page.locator("#tab-runs").click()
    rows = page.locator("#runs-list .run-row")
    expect(rows).to_have_count(20)
    expect(page.locator("#runs-tab-count")).to_have_text("(25)")

    page.locator("#btn-runs-more").click()
    expect(rows).to_have_count(25)
    expect(page.locator("#btn-runs-more")).to_be_hidden()

    page.locator("#runs-filter-status").select_option("error")
    expect(rows).to_have_count(5)
    expect(page.locator("#runs-list .run-pill")).to_have_text(["failed"] * 5)
    page.screenshot(path=str(artifacts / "editor-runs-filtered.png"))
    page.locator("#runs-filter-status").select_option("")
    page.locator("#runs-filter-trigger").select_option("webhook")
    expect(rows).to_have_count(1)
    page.locator("#runs-filter-trigger").select_option("")
    page.locator("#runs-filter-range").select_option("hour")
    expect(rows).to_have_count(20)
    run_workflow(monitor, {"block": 1})  # a new run still arrives under a filter it passes
    expect(rows).to_have_count(21)

"""Admin's budget gauges and a key's chart data: meters with their numbers, from the selectors."""

from __future__ import annotations

import json
import re

import pytest
from django.conf import settings
from django.urls import reverse

from keeperstate.state.models import WorkflowState
from keeperstate.state.store import StateScope, state_increment, state_set

pytestmark = pytest.mark.django_db


def scope_of(workflow):
    return StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)


def meters(body):
    return {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(
        r'data-gauge="([\w-]+)" data-value="(\d+)" data-max="(\d+)"', body)}


def test_the_state_page_gauges_the_organization_and_the_workflow_and_charts_the_key(admin_client, workflow):
    # given a counter written three times and a second key
    for _ in range(3):
        state_increment(scope=scope_of(workflow), key="count")
    state_set(scope=scope_of(workflow), key="other", value="x")
    row = WorkflowState.objects.get(key="count")
    # when
    body = admin_client.get(reverse("admin:keeperstate_workflowstate_change", args=[row.pk])).content.decode()
    # then: three meters with the numbers the selectors count
    assert meters(body) == {
        "workflow-keys": (2, settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW),
        "org-keys": (2, settings.KEEPERSTATE_ORG_MAX_KEYS),
        "org-bytes": (1 + 3, settings.KEEPERSTATE_ORG_MAX_BYTES),  # 3 and "x" as Postgres renders them
    }
    assert body.count("<meter ") == 3
    # and the key's series in the page for admin-charts.js, with the scripts it needs (no inline code)
    series = json.loads(re.search(r'<script id="ks-key-chart" type="application/json">(.*?)</script>', body).group(1))
    assert (series["kind"], [p["value"] for p in series["points"]]) == ("numbers", [1, 2, 3])
    assert 'src="/static/vendor/chart.js/chart.umd.min.js"' in body
    assert 'type="module" src="/static/keeperstate/admin-charts.js"' in body or (
        'src="/static/keeperstate/admin-charts.js" type="module"' in body)


def test_a_gauge_near_its_limit_says_so_in_words(admin_client, workflow, settings):
    settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW = 5
    for key in "abcd":
        state_set(scope=scope_of(workflow), key=key, value=1)
    body = admin_client.get(reverse("admin:keeperstate_workflow_change", args=[workflow.pk])).content.decode()
    assert meters(body) == {"workflow-keys": (4, 5)}
    assert "4 of 5 (80.0 %) — near the limit" in body


def test_the_organization_pages_gauge_its_budget(admin_client, org, workflow):
    state_set(scope=scope_of(workflow), key="a", value=12)
    change = admin_client.get(reverse("admin:keeperstate_organization_change", args=[org.pk])).content.decode()
    listing = admin_client.get(reverse("admin:keeperstate_organization_changelist")).content.decode()
    for body in (change, listing):
        assert meters(body)["org-keys"] == (1, settings.KEEPERSTATE_ORG_MAX_KEYS)
        assert meters(body)["org-bytes"] == (2, settings.KEEPERSTATE_ORG_MAX_BYTES)

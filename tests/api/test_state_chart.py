"""GET /api/workflows/<id>/state-chart/?key=: a key over time, from the history the store keeps."""

from __future__ import annotations

import pytest
from django.conf import settings

from keeperstate.core.buckets import RANGES, window
from keeperstate.executions.service import run_workflow
from keeperstate.state.maintenance import admin_update
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import StateScope, state_delete, state_increment, state_set

pytestmark = pytest.mark.django_db


def chart_url(workflow, key, **query):
    from urllib.parse import urlencode

    return f"/api/workflows/{workflow.id}/state-chart/?{urlencode({'key': key, **query})}"


def scope_of(workflow):
    return StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)


def test_a_numeric_key_is_its_values_by_time_with_each_writes_run(client_as_alice, monitor):
    # given the block monitor run on blocks 100, 101 and 105
    runs = [run_workflow(monitor, {"block": block}) for block in (100, 101, 105)]
    # when
    body = client_as_alice.get(chart_url(monitor, "cursor")).json()
    # then: three points, oldest first, each with its version and run
    assert body["kind"] == "numbers"
    assert [(p["value"], p["version"], p["execution"]) for p in body["points"]] == [
        (100, 1, str(runs[0].id)), (101, 2, str(runs[1].id)), (105, 3, str(runs[2].id)),
    ]
    assert [p["operation"] for p in body["points"]] == ["insert", "update", "update"]
    assert body["points"][0]["at"] < body["points"][1]["at"] < body["points"][2]["at"]


def test_a_deletion_is_a_gap_and_an_admin_repair_names_its_admin(client_as_alice, workflow):
    scope = scope_of(workflow)
    state_increment(scope=scope, key="count", by=2)
    admin_update(state_id=WorkflowState.objects.get(key="count").pk, value=7, expires_at=None, actor="admin:ada")
    state_delete(scope=scope, key="count")
    state_increment(scope=scope, key="count", by=1)
    points = client_as_alice.get(chart_url(workflow, "count")).json()["points"]
    assert [(p["operation"], p["value"]) for p in points] == [
        ("insert", 2), ("update", 7), ("delete", None), ("insert", 1),
    ]
    assert points[1]["actor"] == "admin:ada"
    assert points[1]["execution"] is None


def test_other_values_are_writes_per_bucket(client_as_alice, workflow):
    # given a key that once held text
    scope = scope_of(workflow)
    state_set(scope=scope, key="seen", value=1)
    state_set(scope=scope, key="seen", value="0xabc")
    state_set(scope=scope, key="seen", value={"block": 3})
    state_delete(scope=scope, key="seen")
    # when
    body = client_as_alice.get(chart_url(workflow, "seen", range="1h")).json()
    # then: the writes in the bucket that holds now
    assert (body["kind"], body["range"], body["bucketSeconds"], len(body["buckets"])) == ("writes", "1h", 120, 30)
    start, end = window(RANGES["1h"])
    assert body["buckets"][0]["start"] == start.isoformat()
    # (in the last bucket or two: the writes may straddle a 2-minute boundary)
    assert sum(b["writes"] for b in body["buckets"][-2:]) == sum(b["writes"] for b in body["buckets"]) == 3
    assert sum(b["deletes"] for b in body["buckets"]) == 1


def test_a_key_without_history_is_empty(client_as_alice, workflow):
    body = client_as_alice.get(chart_url(workflow, "never")).json()

    assert {name: body[name] for name in ("key", "kind", "events")} == {"key": "never", "kind": "empty", "events": 0}
    assert set(body) == {"key", "kind", "events", "runs"}
    assert not any(bucket["reads"] for bucket in body["runs"]["buckets"])


def test_the_series_holds_the_history_the_store_keeps(client_as_alice, workflow, settings):
    scope = scope_of(workflow)
    for _ in range(settings.KEEPERSTATE_HISTORY_PER_KEY + 5):
        state_increment(scope=scope, key="n")
    points = client_as_alice.get(chart_url(workflow, "n")).json()["points"]
    assert len(points) == settings.KEEPERSTATE_HISTORY_PER_KEY
    assert points[-1]["value"] == settings.KEEPERSTATE_HISTORY_PER_KEY + 5


@pytest.mark.parametrize(("query", "code"), [({"key": " "}, "STATE_INVALID_KEY"),
                                             ({"key": "a", "range": "1y"}, "STATS_INVALID_RANGE")])
def test_a_bad_key_or_range_is_a_coded_400(client_as_alice, workflow, query, code):
    from urllib.parse import urlencode

    response = client_as_alice.get(f"/api/workflows/{workflow.id}/state-chart/?{urlencode(query)}")
    assert response.status_code == 400
    assert response.json()["code"] == code


def test_without_a_key_is_a_coded_400(client_as_alice, workflow):
    response = client_as_alice.get(f"/api/workflows/{workflow.id}/state-chart/")
    assert (response.status_code, response.json()["code"]) == (400, "STATE_INVALID_KEY")


def test_another_organizations_key_is_not_found(client_as_alice, foreign_workflow):
    state_set(scope=scope_of(foreign_workflow), key="cursor", value=9)
    response = client_as_alice.get(chart_url(foreign_workflow, "cursor"))
    assert response.status_code == 404
    assert "9" not in response.content.decode()


def test_logged_out_is_401(client, workflow):
    assert client.get(chart_url(workflow, "cursor")).status_code == 401


def test_the_workflow_ceiling_is_the_setting(workflow):
    from keeperstate.state.charts import workflow_usage

    state_set(scope=scope_of(workflow), key="a", value=1)
    usage = workflow_usage(scope_of(workflow))
    assert (usage.live_keys, usage.max_keys) == (1, settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW)


def test_a_numeric_key_is_one_statement_of_history_and_other_values_two(workflow):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from keeperstate.state.charts import key_series

    scope = scope_of(workflow)
    for _ in range(30):
        state_increment(scope=scope, key="n")
        state_set(scope=scope, key="t", value="x")
    with CaptureQueriesContext(connection) as numbers:
        key_series(scope=scope, key="n", span=RANGES["24h"])
    with CaptureQueriesContext(connection) as writes:
        key_series(scope=scope, key="t", span=RANGES["24h"])
    assert (len(numbers), len(writes)) == (1, 2)  # the kept events; then their count per bucket


def test_the_runs_readings_cover_the_whole_range_beyond_the_kept_history(client_as_alice, monitor, settings):
    # given a history that keeps two changes only, and four runs of the monitor (blocks 100 … 103)
    from django.db import connection

    from keeperstate.state.maintenance import HISTORY_SETTING_SQL
    settings.KEEPERSTATE_HISTORY_PER_KEY = 2
    with connection.cursor() as cursor:
        cursor.execute(HISTORY_SETTING_SQL, {"value": 2})
    for block in (100, 101, 102, 103):
        run_workflow(monitor, {"block": block})

    body = client_as_alice.get(chart_url(monitor, "cursor", range="1h")).json()

    # then the history's points are its last two changes; the runs' readings, what every State Get
    # read (the first found no cursor: no number)
    assert [p["value"] for p in body["points"]] == [102, 103]
    runs = body["runs"]
    assert (runs["range"], runs["bucketSeconds"], runs["nodes"]) == ("1h", 120, ["state-get-1"])
    read = [b for b in runs["buckets"] if b["reads"]]
    assert sum(b["reads"] for b in read) == 3
    assert read[-1]["last"] == 102  # the cursor the last run read, before it wrote 103
    assert min(b["min"] for b in read) == 100


def test_a_key_no_node_reads_has_no_readings(client_as_alice, workflow):
    state_set(scope=scope_of(workflow), key="made-by-hand", value=5)

    runs = client_as_alice.get(chart_url(workflow, "made-by-hand")).json()["runs"]

    assert runs["nodes"] == []
    assert all(b["reads"] == 0 and b["last"] is None for b in runs["buckets"])

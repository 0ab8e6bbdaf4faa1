"""GET /api/workflows/<id>/executions/stats/: runs per bucket by status and duration p50/p95,
computed by one aggregate statement, for your organizations' workflows only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from keeperstate.core.buckets import RANGES, window
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.stats import STATS_SQL
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db
Status = WorkflowExecution.Status


def seed(workflow, at, status, duration_ms=None, *, started=True):
    """A run queued at ``at`` that took ``duration_ms`` (none: it never finished, or never started)."""
    started_at = at + timedelta(milliseconds=5) if started else None
    finished_at = started_at + timedelta(milliseconds=duration_ms) if started_at and duration_ms is not None else None
    return WorkflowExecution.objects.create(
        workflow=workflow, status=status, queued_at=at, started_at=started_at, finished_at=finished_at
    )


@pytest.fixture
def hour_ago_bucket():
    """The start of the 24h chart's last bucket but one (wholly in the past)."""
    start, _end = window(RANGES["24h"])
    return start + 22 * RANGES["24h"].step


@pytest.fixture
def seeded(workflow, hour_ago_bucket):
    # given: in one bucket, 3 successes (100, 200, 300 ms), an error (1000 ms), a skipped run that
    # never started and an interrupted one that never finished; a running and a queued run
    at = hour_ago_bucket + timedelta(minutes=5)
    for ms in (100, 200, 300):
        seed(workflow, at, Status.SUCCESS, ms)
    seed(workflow, at + timedelta(minutes=1), Status.ERROR, 1000)
    seed(workflow, at, Status.SKIPPED, started=False)
    seed(workflow, at, Status.INTERRUPTED)
    seed(workflow, at, Status.RUNNING)
    seed(workflow, at, Status.QUEUED, started=False)
    # and a success in the previous hour, and one older than the chart
    seed(workflow, hour_ago_bucket - timedelta(minutes=30), Status.SUCCESS, 50)
    seed(workflow, hour_ago_bucket - timedelta(days=2), Status.ERROR, 50)
    return workflow


def test_counts_each_status_and_the_duration_percentiles_of_a_bucket(api, seeded, hour_ago_bucket):
    # when
    response = api.get(f"/api/workflows/{seeded.id}/executions/stats/?range=24h")
    # then
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["range"] == "24h"
    assert body["bucketSeconds"] == 3600
    assert len(body["buckets"]) == 24
    bucket = body["buckets"][22]
    assert bucket["start"] == hour_ago_bucket.isoformat()
    assert {k: bucket[k] for k in ("success", "error", "interrupted", "skipped", "total")} == {
        "success": 3, "error": 1, "interrupted": 1, "skipped": 1, "total": 6,
    }
    # percentile_cont over 100, 200, 300, 1000 ms (the runs that started and finished)
    assert bucket["p50Ms"] == pytest.approx(250.0)
    assert bucket["p95Ms"] == pytest.approx(300 + 0.85 * 700)
    previous = body["buckets"][21]
    assert (previous["success"], previous["total"], previous["p50Ms"]) == (1, 1, pytest.approx(50.0))
    assert body["totals"] == {"success": 4, "error": 1, "interrupted": 1, "skipped": 1, "total": 7}


def test_buckets_without_runs_are_there_with_zeros(api, workflow):
    body = api.get(f"/api/workflows/{workflow.id}/executions/stats/?range=1h").json()
    assert len(body["buckets"]) == 30
    assert body["bucketSeconds"] == 120
    assert all(b["total"] == 0 and b["p50Ms"] is None and b["p95Ms"] is None for b in body["buckets"])
    assert body["buckets"][0]["start"] == body["from"]
    assert body["buckets"][-1]["end"] == body["to"]


@pytest.mark.parametrize(("name", "count", "seconds"), [("1h", 30, 120), ("24h", 24, 3600), ("7d", 28, 21600)])
def test_each_range_has_its_buckets_and_the_last_holds_now(api, workflow, name, count, seconds):
    body = api.get(f"/api/workflows/{workflow.id}/executions/stats/?range={name}").json()
    assert (len(body["buckets"]), body["bucketSeconds"]) == (count, seconds)
    last = body["buckets"][-1]
    assert last["start"] <= timezone.now().isoformat() < last["end"]


def test_without_a_range_it_is_24h(api, workflow):
    assert api.get(f"/api/workflows/{workflow.id}/executions/stats/").json()["range"] == "24h"


@pytest.mark.parametrize("bad", ["2h", "", "1H", "24h ", "7d;drop"])
def test_a_bad_range_is_a_coded_400(api, workflow, bad):
    response = api.get(f"/api/workflows/{workflow.id}/executions/stats/", {"range": bad})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "STATS_INVALID_RANGE"
    assert "1h, 24h or 7d" in body["detail"]
    assert body["details"] == {"allowed": ["1h", "24h", "7d"]}


def test_another_organizations_workflow_answers_404_and_counts_nothing_of_it(
    api, workflow, foreign_workflow, hour_ago_bucket
):
    # given: runs of globex's workflow in the window
    for _ in range(3):
        seed(foreign_workflow, hour_ago_bucket + timedelta(minutes=1), Status.SUCCESS, 10)
    # when alice of acme asks for globex's chart, or for her own
    foreign = api.get(f"/api/workflows/{foreign_workflow.id}/executions/stats/")
    own = api.get(f"/api/workflows/{workflow.id}/executions/stats/")
    # then
    assert foreign.status_code == 404
    assert foreign.json()["code"] == "NOT_FOUND"
    assert own.json()["totals"]["total"] == 0
    # and bob of globex sees his runs
    bob = token_client(foreign_workflow.created_by)
    assert bob.get(f"/api/workflows/{foreign_workflow.id}/executions/stats/").json()["totals"]["success"] == 3


def test_anonymous_is_401(anonymous, workflow):
    assert anonymous.get(f"/api/workflows/{workflow.id}/executions/stats/").status_code == 401


def statements_of(client, url):
    """The statements one request sends, as the driver receives them."""
    sent: list[str] = []

    def record(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        body = client.get(url).json()
    return sent, body


def test_one_aggregate_statement_whatever_the_number_of_runs(api, workflow, hour_ago_bucket, django_assert_num_queries):
    # given: the chart of few runs…
    seed(workflow, hour_ago_bucket, Status.SUCCESS, 10)
    url = f"/api/workflows/{workflow.id}/executions/stats/?range=7d"
    api.get(url)  # warm: the token's first use records its last use
    with django_assert_num_queries(3):  # the token with its rate counter, the workflow, the chart
        api.get(url)
    few, _ = statements_of(api, url)
    # …and of many
    WorkflowExecution.objects.bulk_create(
        WorkflowExecution(workflow=workflow, organization_id=workflow.organization_id, status=Status.SUCCESS,
                          queued_at=hour_ago_bucket - timedelta(hours=h),
                          started_at=hour_ago_bucket, finished_at=hour_ago_bucket + timedelta(milliseconds=h))
        for h in range(150)
    )
    with django_assert_num_queries(3):
        api.get(url)
    many, body = statements_of(api, url)
    # then: the same statements, one of them the aggregate, and every run counted
    assert few == many
    assert [sql for sql in many if "percentile_cont" in sql] == [STATS_SQL]
    assert body["totals"]["success"] == 151


def test_the_aggregate_reads_the_workflow_queued_index(workflow):
    # given: enough runs of other workflows that a scan would cost more than the index
    start, end = window(RANGES["24h"])
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # tiny test tables: ask which index serves it
        cursor.execute(
            "EXPLAIN " + STATS_SQL,
            {"step": RANGES["24h"].step, "origin": start, "workflows": [workflow.id], "start": start, "end": end,
             "organizations": [workflow.organization_id]},
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "execution_workflow_queued" in plan


def test_the_runs_list_takes_a_buckets_window(api, seeded, hour_ago_bucket):
    # when: the runs of the bucket a chart click names
    end = hour_ago_bucket + timedelta(hours=1)
    response = api.get(
        f"/api/workflows/{seeded.id}/executions/",
        {"since": hour_ago_bucket.isoformat(), "until": end.isoformat()},
    )
    # then: the bucket's eight runs (the chart counts the six finished), none from outside it
    assert response.status_code == 200
    queued = [r["queuedAt"] for r in response.json()["results"]]
    assert len(queued) == 8
    assert all(hour_ago_bucket.isoformat() <= q < end.isoformat() for q in queued)


def test_a_bad_window_time_is_a_field_error(api, workflow):
    response = api.get(f"/api/workflows/{workflow.id}/executions/", {"since": "yesterday"})
    assert response.status_code == 400
    assert "since" in response.json()


def test_the_schema_has_the_stats_endpoint(api):
    schema = api.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/workflows/{id}/executions/stats/"]["get"]
    assert [p["name"] for p in operation["parameters"] if p["in"] == "query"] == ["range"]
    assert {"200", "400", "401", "404"} <= set(operation["responses"])
    props = schema["components"]["schemas"]["ExecutionStatsOutput"]["properties"]
    assert {"range", "bucketSeconds", "from", "to", "totals", "buckets"} <= set(props)

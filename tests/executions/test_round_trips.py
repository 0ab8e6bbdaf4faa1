"""What a whole run sends to Postgres, counted on the connection (keeperstate.ops.round_trips),
held at the budgets docs/benchmarks.md gives ("Round trips per run"): statements, round trips and
commits are the same on every machine, where a run's time is not (ADR 0071).

Each run here goes as served: through the API with a token (or the worker's job), its own
transactions (no test transaction around it), prepared statements on, and the health check of
the kept connection that a request starts with.
"""

from __future__ import annotations

import pytest
from django.db import close_old_connections, connection

from keeperstate.executions.service import queue_run, run_queued
from keeperstate.ops.round_trips import Sent, counting
from tests.api.conftest import token_client
from tests.executions.graphs import counter_graph, counter_then_call_graph
from tests.factories import make_workflow
from tests.wire import traced

pytestmark = pytest.mark.django_db(transaction=True)

# statements, round trips, commits (to the disk), and writes committed without a flush (the
# token's and the organization's rate counters, unlogged: ADR 0061)
BUDGETS = {
    # the token with its rate hit, the workflow; then the organization's run count (committed on
    # its own) with BEGIN and the increment, and the record inserted finished with the COMMIT
    # (keeperstate.ops.postgres)
    "counter": {"statements": 5, "round_trips": 4, "commits": 1, "unlogged_writes": 2},
    # as the counter, with State Get, Condition (no statement) and the compare-and-set
    "monitor": {"statements": 6, "round_trips": 5, "commits": 1, "unlogged_writes": 2},
    # an egress node: the record committed first (one statement on its own), the increment with
    # its progress (BEGIN, sent alone before the savepoint, which has no parameters; the increment
    # in the savepoint, the progress, COMMIT), the call with the run's end (BEGIN with it, COMMIT)
    "counter then call": {"statements": 7, "round_trips": 12, "commits": 3, "unlogged_writes": 2},
    # a worker's job: BEGIN with the claim, the increment, the end with the COMMIT
    "queued counter": {"statements": 3, "round_trips": 3, "commits": 1, "unlogged_writes": 0},
}


@pytest.fixture(autouse=True)
def prepared(settings):
    """Prepared statements, as the service runs unless told otherwise (docs/configuration.md)."""
    options = connection.settings_dict["OPTIONS"]
    saved = dict(options)
    options.update({"server_side_binding": True, "prepare_threshold": 5})
    connection.close()
    yield
    options.clear()
    options.update(saved)
    connection.close()


def sent_by_request(action) -> Sent:
    """What ``action`` sends as one request would: Django's request start first (it marks the kept
    connection for its health check; the test client leaves that out)."""
    action()  # warm: the connection is open and kept, the statements prepared
    close_old_connections()
    with counting() as sent:
        action()
    return sent


def test_a_counter_run_through_the_api_keeps_its_budget(org, user):
    nodes, edges = counter_graph()
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    api = token_client(user)

    sent = sent_by_request(lambda: api.post(f"/api/workflows/{workflow.id}/execute/", {"input": {}}))

    # held exactly: a count that moves either way is a change docs/benchmarks.md must say
    assert sent.as_dict() == BUDGETS["counter"], sent.statements


def test_a_block_monitor_run_through_the_api_keeps_its_budget(user, monitor):
    api = token_client(user)
    blocks = iter(range(100, 999))  # the cursor's size stays the same: its overwrite is one statement
    for _ in range(3):
        api.post(f"/api/workflows/{monitor.id}/execute/", {"input": {"block": next(blocks)}})

    sent = sent_by_request(lambda: api.post(f"/api/workflows/{monitor.id}/execute/",
                                            {"input": {"block": next(blocks)}}))

    assert sent.as_dict() == BUDGETS["monitor"], sent.statements


def test_a_run_with_an_egress_node_commits_its_record_first_then_node_by_node(org, user):
    nodes, edges = counter_then_call_graph()
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    api = token_client(user)

    sent = sent_by_request(lambda: api.post(f"/api/workflows/{workflow.id}/execute/", {"input": {}}))

    assert sent.as_dict() == BUDGETS["counter then call"], sent.statements


def test_a_queued_counter_run_is_one_commit_in_the_worker(org, user):
    nodes, edges = counter_graph()
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    def job() -> None:
        execution = queue_run(workflow, {}, trigger="webhook").execution
        close_old_connections()  # as the worker's task does before each job
        with counting() as sent:
            assert run_queued(execution.pk, execution.organization_id).status == "success"
        job.sent = sent  # type: ignore[attr-defined]

    job()  # warm
    job()

    assert job.sent.as_dict() == BUDGETS["queued counter"], job.sent.statements  # type: ignore[attr-defined]


def test_the_count_is_what_the_wire_shows(org, user):
    # libpq's own trace of the messages sent, grouped by the server's answers, against the count
    nodes, edges = counter_graph()
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    api = token_client(user)
    api.post(f"/api/workflows/{workflow.id}/execute/", {"input": {}})
    close_old_connections()

    with counting() as sent, traced() as trips:
        api.post(f"/api/workflows/{workflow.id}/execute/", {"input": {}})

    assert len(trips) == sent.round_trips == BUDGETS["counter"]["round_trips"], trips
    # the run's count (prepared by the warm-up run: its name is bound), its own sync (it commits
    # alone, outside the run), then BEGIN and the increment
    run = " ".join(trips[2])
    assert trips[2][0].startswith('Bind "" "_ks_ahead_')
    assert run.index("_ks_ahead_") < run.index("Sync") < run.index('"BEGIN"')
    assert run.index('"BEGIN"') < run.index("keeperstate_increment_key")
    record = " ".join(trips[3])  # the record inserted, then COMMIT, then the one Sync both wait for
    assert record.index('INSERT INTO "workflow_execution"') < record.index('Parse "" "COMMIT" 0')
    assert "Sync" in trips[3]


def test_the_count_sees_what_it_counts():
    # a planted extra statement in autocommit, and a transaction: each is counted where it belongs
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE t_count (n int)")
    with counting() as sent:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.execute("INSERT INTO t_count VALUES (1)")
        from django.db import transaction

        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO t_count VALUES (2)")
                cursor.execute("SELECT count(*) FROM t_count")

    assert sent.as_dict() == {"statements": 4, "round_trips": 6, "commits": 2, "unlogged_writes": 0}

"""Workers as real processes: scheduled runs, webhooks, and a worker killed mid-run."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import psycopg
import pytest
from django.db import connection

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import queue_run, run_now
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.services import workflow_create, workflow_set_active
from tests.executions.graphs import counter_graph, counter_then_call_graph
from tests.workers.processes import child_database_url, free_port, wait_until

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

Status = WorkflowExecution.Status


def counted(workflow, key="runs") -> int:
    row = WorkflowState.objects.filter(workflow=workflow, key=key).first()
    return row.value if row else 0


def status_of(execution) -> str:
    return WorkflowExecution.objects.values_list("status", flat=True).get(pk=execution.pk)


def test_an_interval_workflow_on_three_workers_runs_each_tick_once(processes, org, user, fast_schedules):
    nodes, edges = counter_graph("Schedule", interval=1, overlap="allow")
    workflow = workflow_create(organization=org, user=user, name="Heartbeat", nodes=nodes, edges=edges, active=True)
    for n in range(3):
        processes.worker(f"worker-{n}")

    time.sleep(12)
    workflow_set_active(workflow, False)
    stopped_at = time.time()
    time.sleep(2)  # the schedulers look again; nothing new may start
    wait_until(lambda: not workflow.executions.filter(status__in=["queued", "running"]).exists(), 30, "runs to end")
    processes.stop_all()

    executions = list(workflow.executions.order_by("scheduled_for"))
    ticks = [e.scheduled_for for e in executions]
    successes = [e for e in executions if e.status == "success"]
    print(f"{len(executions)} ticks run by 3 workers; counter {counted(workflow)}")
    assert len(ticks) == len(set(ticks)), "a tick ran twice"
    assert len(ticks) >= 10
    assert len(successes) == len(executions), [e.error for e in executions if e.status != "success"]
    assert counted(workflow) == len(successes)
    assert max(ticks).timestamp() <= stopped_at + 1, "a run started after the workflow was switched off"
    gaps = {(b - a).total_seconds() for a, b in zip(ticks, ticks[1:], strict=False)}
    assert gaps <= {1.0, 2.0}, f"ticks were lost: gaps {sorted(gaps)}"


def test_a_worker_killed_mid_run_of_an_egress_workflow_leaves_it_interrupted_and_never_replayed(
    processes, org, user
):
    # a run with an HTTP Request is recorded first and committed node by node (ADR 0073)
    nodes, edges = counter_then_call_graph()
    workflow = workflow_create(organization=org, user=user, name="Counts then calls", nodes=nodes, edges=edges)
    run_now(workflow, {}, trigger="api")  # the counter exists: 1
    first = processes.worker("doomed", "--concurrency", "1", "--no-scheduler")

    # Hold the counter's row so the worker's run blocks inside its State Increment.
    with psycopg.connect(child_database_url(), autocommit=False) as blocker:
        blocker.execute("SELECT 1 FROM workflow_state WHERE workflow_id = %s FOR UPDATE", [workflow.pk])
        stuck = queue_run(workflow, {}, trigger="webhook").execution
        wait_until(lambda: status_of(stuck) == "running", 30, "the doomed worker to start the run")
        processes.worker("survivor")
        processes.kill(first)
        wait_until(lambda: status_of(stuck) == "interrupted", 30, "housekeeping to interrupt the run")
        blocker.rollback()

    after = queue_run(workflow, {}, trigger="webhook").execution
    # its call is refused (loopback), so it ends as an error, after its increment
    wait_until(lambda: status_of(after) == "error", 30, "the surviving worker to run the next run")
    # the dead worker's job went back to the queue and was taken again: it must not have run
    wait_until(lambda: not _jobs_of(stuck, "doing", "todo"), 30, "the dead worker's job to be retried")

    stuck.refresh_from_db()
    assert (stuck.status, stuck.error_code) == ("interrupted", "RUN_INTERRUPTED")
    assert set(stuck.node_results) <= {"trigger"}
    # 1 before, 1 by the run after; the killed run's statement may have committed once on its own
    assert counted(workflow) in (2, 3)
    assert workflow.executions.filter(status="running").count() == 0


def test_a_worker_killed_mid_run_in_one_commit_leaves_it_queued_and_another_worker_runs_it_once(
    processes, org, user
):
    # a run with no egress node is one transaction, its claim of the execution included (ADR 0073)
    nodes, edges = counter_graph("Manual")
    workflow = workflow_create(organization=org, user=user, name="Counter", nodes=nodes, edges=edges)
    run_now(workflow, {}, trigger="api")  # the counter exists: 1
    first = processes.worker("doomed", "--concurrency", "1", "--no-scheduler")

    # Hold the counter's row so the worker's run blocks inside its State Increment.
    with psycopg.connect(child_database_url(), autocommit=False) as blocker:
        blocker.execute("SELECT 1 FROM workflow_state WHERE workflow_id = %s FOR UPDATE", [workflow.pk])
        stuck = queue_run(workflow, {}, trigger="webhook").execution
        wait_until(lambda: _jobs_of(stuck, "doing"), 30, "the doomed worker to take the job")
        time.sleep(0.5)  # it claims the run and waits on the row, inside the run's transaction
        assert status_of(stuck) == "queued"  # for everyone else, nothing has happened yet
        processes.worker("survivor")
        processes.kill(first)
        blocker.rollback()

    # the dead worker's transaction is rolled back; its job goes back to the queue, and runs once
    wait_until(lambda: status_of(stuck) == "success", 30, "another worker to run the queued execution")
    stuck.refresh_from_db()
    assert stuck.node_results["count"]["data"]["value"] == 2
    assert counted(workflow) == 2  # 1 before, 1 by the run: the killed attempt left nothing
    assert workflow.executions.exclude(status="success").count() == 0


@pytest.mark.parametrize(("graph", "seen_while_slow", "ended"), [
    (counter_then_call_graph, {"running"}, "error"),  # recorded first: running, its heartbeat kept
    (counter_graph, {"queued"}, "success"),  # one commit: nothing to see, nothing to interrupt
])
def test_a_slow_run_of_a_live_worker_is_not_interrupted(processes, org, user, graph, seen_while_slow, ended):
    nodes, edges = graph()
    workflow = workflow_create(organization=org, user=user, name="Counter", nodes=nodes, edges=edges)
    run_now(workflow, {}, trigger="api")
    processes.worker("patient")  # runs housekeeping too: stale after 3 s without a heartbeat

    with psycopg.connect(child_database_url(), autocommit=False) as blocker:
        blocker.execute("SELECT 1 FROM workflow_state WHERE workflow_id = %s FOR UPDATE", [workflow.pk])
        slow = queue_run(workflow, {}, trigger="webhook").execution
        wait_until(lambda: _jobs_of(slow, "doing"), 30, "the worker to take the run")
        wait_until(lambda: status_of(slow) in seen_while_slow, 30, "the worker to start the run")
        seen = set()
        deadline = time.monotonic() + 6  # twice the stale bound
        while time.monotonic() < deadline:
            seen.add(status_of(slow))
            time.sleep(0.2)
        blocker.rollback()

    wait_until(lambda: status_of(slow) == ended, 30, "the slow run to finish")
    assert seen == seen_while_slow
    assert counted(workflow) == 2


def test_a_queued_run_whose_worker_died_before_starting_it_runs_elsewhere(processes, org, user):
    nodes, edges = counter_graph("Manual")
    workflow = workflow_create(organization=org, user=user, name="Counter", nodes=nodes, edges=edges)
    queued = queue_run(workflow, {}, trigger="api").execution
    # A worker registers, takes the job, and dies before it claims the execution: exactly the rows
    # a worker killed at that instant leaves behind.
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM procrastinate_register_worker_v1()")
        dead_worker = cursor.fetchone()[0]
        cursor.execute("SELECT id FROM procrastinate_fetch_job_v2(%s::varchar[], %s)", [["executions"], dead_worker])
        assert cursor.fetchone() is not None
        cursor.execute("UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour' WHERE id = %s",
                       [dead_worker])

    processes.worker("rescuer")

    wait_until(lambda: status_of(queued) == "success", 30, "another worker to run the queued execution")
    assert counted(workflow) == 1


def _jobs_of(execution, *statuses: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status FROM procrastinate_jobs WHERE args->>'execution_id' = %s AND status = ANY(%s)",
            [str(execution.pk), list(statuses)],
        )
        return [row[0] for row in cursor.fetchall()]


def _post(url: str, body: dict, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **headers}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=40) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_webhooks_end_to_end_through_gunicorn_and_a_worker(processes, org, user):
    nodes, edges = counter_graph("Webhook")
    workflow = workflow_create(organization=org, user=user, name="Hooked", nodes=nodes, edges=edges, active=True)
    port = free_port()
    web = processes.start("gunicorn", "-m", "gunicorn", "keeperstate.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2")
    processes.worker("worker")
    url = f"http://127.0.0.1:{port}/hooks/{workflow.id}/"
    secret = {"X-KeeperState-Secret": workflow.webhook_secret}
    wait_until(lambda: web.poll() is None and _answers(url), 60, "gunicorn to listen")

    queued_status, queued = _post(url, {"block": 1}, secret)
    waited_status, waited = _post(url + "?wait=20", {"block": 2}, {**secret, "Idempotency-Key": "d-1"})
    repeat_status, repeat = _post(url + "?wait=20", {"block": 2}, {**secret, "Idempotency-Key": "d-1"})
    wrong_status, wrong = _post(url, {}, {"X-KeeperState-Secret": "nope"})

    assert queued_status == 202
    assert set(queued) == {"executionId", "status"}
    assert waited_status == 200
    assert (waited["status"], waited["trigger"], waited["input"]) == ("success", "webhook", {"block": 2})
    assert repeat_status == 200
    assert repeat["id"] == waited["id"]
    assert (wrong_status, wrong["code"]) == (404, "NOT_FOUND")
    wait_until(lambda: status_of(WorkflowExecution(pk=queued["executionId"])) == "success", 30, "the first run")
    assert counted(workflow) == 2  # the repeated delivery did not run again


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"), timeout=2)
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


def test_bench_runs_measures_runs_against_their_floor_and_prints_json():
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("bench_runs", "--seconds", "0.3", "--web", "1", "--workers", "1", "--burst", "4", stdout=out)

    figures = json.loads(out.getvalue().strip().splitlines()[-1])
    assert set(figures["web"]) == {f"{kind}.web1.c{c}" for kind in ("monitor", "counter") for c in (1, 4, 16)}
    assert figures["statements"]["monitor"]["statements"] >= 5
    assert all(row["runs_per_s"] > 0 for row in figures["floor"].values())
    assert {"monitor.c1_vs_floor", "counter.c1_vs_floor"} <= set(figures["targets"])
    assert figures["stack"]["runs_per_s"] > figures["web"]["counter.web1.c1"]["runs_per_s"]  # a 404 beats a run
    assert 0 < figures["targets"]["counter.c1_vs_floor"]["ceiling"] < 1
    assert figures["queue"]["counter.workers1"]["runs"] == 4
    # the waited webhook and the queued one (taken in and run at once, and drained by workers held
    # while they arrived), beside the API, in the same run
    ways = ("wait.web1.c1", "queued.web1.c4.workers2", "drained.web1.c4.workers2")
    assert set(figures["webhook"]) == {f"{kind}.{how}" for kind in ("monitor", "counter") for how in ways}
    assert all(row["runs"] > 0 for row in figures["webhook"].values())
    drained = figures["webhook"]["counter.drained.web1.c4.workers2"]
    assert drained["intake_per_s"] > 0
    assert drained["intake_cpu_ms"] >= 0  # the web process's, per 202
    assert drained["runs_per_s"] > 0
    # the target reads the drain, not the runs taken in at once (ADR 0085)
    api_c1 = figures["web"]["counter.web1.c1"]["runs_per_s"]
    queued_vs_api = figures["targets"]["counter.webhook_queued_vs_api_c1"]["value"]
    assert queued_vs_api == pytest.approx(drained["runs_per_s"] / api_c1)
    assert {"counter.webhook_wait_p50_vs_api", "counter.webhook_queued_vs_api_c1"} <= set(figures["targets"])
    assert "counter: queued webhooks, 2 workers drain" in out.getvalue()
    assert "counter: webhooks taken in and run at once / the API at 1 client" in out.getvalue()
    # counted per API run, at their budget; CPU per run of the serving processes
    assert figures["sent"]["counter"] == {"statements": 5, "round_trips": 4, "commits": 1, "unlogged_writes": 2}
    assert figures["sent"]["monitor"]["commits"] == 1
    assert {"counter.api.c1", "counter.webhook.wait.c1", "counter.webhook.queued.worker",
            "counter.webhook.drained.worker", "counter.queue.workers1"} <= set(figures["cpu_ms"])
    # A process's CPU time moves in clock ticks (10 ms): a burst of four queued runs may use less
    # than one, so only the API's turn, which keeps a process busy throughout, must show some.
    assert all(ms >= 0 for ms in figures["cpu_ms"].values())
    assert figures["cpu_ms"]["counter.api.c1"] > 0
    # and the whole machine's CPU per run, every process, for the API and the queued webhook
    assert figures["web"]["counter.web1.c1"]["machine_cpu_ms"] > 0
    assert figures["webhook"]["counter.queued.web1.c4.workers2"]["machine_cpu_ms"] >= 0
    assert "counter: the machine's CPU per run, every process: API at 1 client" in out.getvalue()


def test_bench_compare_takes_turns_between_two_checkouts_and_prints_json(monkeypatch):
    import io
    from pathlib import Path

    from django.conf import settings
    from django.core.management import call_command

    out = io.StringIO()
    # this checkout against itself, both sides on the test database: all a test needs
    monkeypatch.setenv("DATABASE_URL", child_database_url())
    call_command("bench_compare", str(Path(settings.BASE_DIR)), "--rounds", "2", "--block", "3", stdout=out)

    figures = json.loads(out.getvalue().strip().splitlines()[-1])
    for kind in ("counter", "monitor", "stack", "queued"):
        for side in ("before", "after"):
            assert figures[f"{kind}.{side}"]["runs_per_s"] > 0
            assert figures[f"{kind}.{side}"]["cpu_ms"] >= 0
        assert set(figures[f"{kind}.after_vs_before"]) == {"p50_ms", "p95_ms", "runs_per_s", "cpu_ms"}
    assert figures["rounds"] == 2
    # the webhooks' queued runs, which no worker ran, are gone with their jobs; the API's runs stay
    benched = WorkflowExecution.objects.filter(organization__name="bench compare")
    assert benched.filter(trigger="webhook").count() == 0
    assert benched.filter(trigger="api").exists()
    organizations = sorted({str(pk) for pk in benched.values_list("organization_id", flat=True)})
    assert len(organizations) == 2  # one per side
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM procrastinate_jobs WHERE args->>'organization_id' = ANY(%s)",
                       [organizations])
        assert cursor.fetchone() == (0,)


def test_bench_compares_proxy_adds_its_delay_to_each_round_trip_and_forwards_all():
    import time

    import psycopg

    from keeperstate.management.commands.bench_compare import DelayingProxy

    proxy = DelayingProxy(child_database_url(), round_trip=0.02)
    try:
        with psycopg.connect(proxy.url, autocommit=True) as conn:
            started = time.perf_counter()
            for n in range(3):
                assert conn.execute("SELECT %s::int, repeat('x', 100000)", [n]).fetchone() == (n, "x" * 100000)
            took = time.perf_counter() - started
    finally:
        proxy.stop()

    assert took >= 3 * 0.02  # each of the three round trips held 10 ms each way, at least


def test_bench_compares_other_side_may_have_its_own_database_on_the_same_server(monkeypatch):
    from django.core.management import CommandError, call_command

    from keeperstate.management.commands.bench_compare import _with_database

    # the other side's address: the same server (and proxy), the named database, the rest kept
    assert _with_database("postgresql://postgres:p%40ss@127.0.0.1:6543/ks_bench?sslmode=disable", "ks_base") == (
        "postgresql://postgres:p%40ss@127.0.0.1:6543/ks_base?sslmode=disable")
    # and without a server to name it on, a sentence instead
    monkeypatch.delenv("DATABASE_URL", raising=False)
    with pytest.raises(CommandError, match="set DATABASE_URL"):
        call_command("bench_compare", ".", "--before-database", "ks_base")

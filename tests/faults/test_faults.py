"""Faults under load: the real service (`manage.py serve`: gunicorn, a worker, Postgres) is hit
by 8 careful clients while Postgres, the web server or the worker is killed.

Each fault is tried on both ways a run commits (ADR 0073): the counter, a run with no egress node,
in one commit; and a counter that then calls a local server (HTTP Request), recorded first and
committed node by node.

After each fault, whatever the timing:
- every increment the database holds belongs to exactly one execution whose record says that
  increment's value: a success, or a run recorded first that was interrupted or failed after it
  (none lost, none counted twice, none unrecorded);
- what each client learned about each of its runs is what the database says;
- no execution is left ``running`` past the housekeeping bound;
- clients only ever got coded answers (no 500, no driver text);
- the service answers again without a person.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import psutil
import psycopg
import pytest
from django.db import connection

from keeperstate.ops.database import database_url
from tests.egress.server import LocalServer
from tests.executions.graphs import counter_graph, counter_then_call_graph
from tests.faults.load import Load
from tests.ops.serving import (
    Managed,
    copy_data_dir,
    free_port,
    own_embedded_server,
    postmaster_pid,
    stop_embedded_postgres,
    wait_until,
)

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

FAST = {
    "KEEPERSTATE_RUN_HEARTBEAT_SECONDS": "0.5",
    "KEEPERSTATE_RUN_STALE_SECONDS": "3",
    "KEEPERSTATE_HOUSEKEEPING_SECONDS": "0.5",
    "KEEPERSTATE_WORKER_HEARTBEAT_SECONDS": "0.5",
    "KEEPERSTATE_WORKER_STALLED_SECONDS": "2",
    "KEEPERSTATE_SCHEDULER_POLL_SECONDS": "0.5",
    # The load is one token and one organization on purpose: lift the API rate and the runs per
    # minute (issue 11), which would otherwise answer part of it with 429.
    "KEEPERSTATE_API_RATE": "100000000/min",
    "KEEPERSTATE_ORG_RUNS_PER_MINUTE": "100000000",
}
CLIENTS, SECONDS, FAULT_AT = 8, 8.0, 2.0
# The two ways a run commits (keeperstate.executions.service).
ONE_COMMIT, RECORDED_FIRST = "one commit", "recorded first"


@dataclass
class Service:
    serve: Managed
    port: int
    token: str
    workflow_id: str
    conninfo: str
    data_dir: Path
    kind: str  # ONE_COMMIT or RECORDED_FIRST

    def pid_of(self, name: str) -> int:
        line = self.serve.wait_for_line(f"{name} pid", 5)
        return int(re.search(rf"{re.escape(name)} pid (\d+)", line).group(1))  # type: ignore[union-attr]


def start_service(data_dir: Path, *, own_server: bool, calls: LocalServer | None = None, **extra: str) -> Service:
    """serve with a counter workflow; with ``calls``, the counter then calls that server (a run
    recorded first), which the service may reach."""
    env = {**FAST, **extra}
    if calls is not None:
        env["KEEPERSTATE_HTTP_ALLOW"] = f"127.0.0.1:{calls.port}"
    if not own_server:
        env["DATABASE_URL"] = database_url(connection.settings_dict)
    port = free_port()
    serve = Managed("serve", str(port), "--web-workers", "2", data_dir=data_dir, **env)
    try:
        serve.wait_for_line("stop with Ctrl-C", 180)
        if own_server:
            pid_file = (data_dir / "postgres" / "postmaster.pid").read_text().splitlines()
            conninfo = f"host={pid_file[4]} port={pid_file[3]} user=postgres dbname=postgres"
        else:
            conninfo = env["DATABASE_URL"]
        token = Managed("create_api_token", "demo", data_dir=data_dir, **env)
        assert token.process.wait(timeout=120) == 0, token.output()
        token.stop()
        key = token.out[-1].strip()
        nodes, edges = counter_then_call_graph(f"{calls.url}/echo") if calls is not None else counter_graph("Manual")
        body = {"name": "Counter under faults", "nodes": nodes, "edges": edges}
        status, answer = call(port, key, "POST", "/api/workflows/", body)
        assert status == 201, answer
    except BaseException:
        serve.stop(timeout=60)
        if own_server:
            stop_embedded_postgres(data_dir)
        raise
    return Service(serve, port, key, answer["id"], conninfo, data_dir, RECORDED_FIRST if calls else ONE_COMMIT)


def call(port: int, token: str, method: str, path: str, body: object = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None,
                     {"Authorization": f"Token {token}", "Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


@pytest.fixture(params=[ONE_COMMIT, RECORDED_FIRST])
def calls(request):
    """None for the counter in one commit; a local server the counter calls, for a run recorded first."""
    if request.param == ONE_COMMIT:
        yield None
        return
    server = LocalServer().start()
    yield server
    server.stop()


@pytest.fixture
def own_service(migrated, tmp_path, calls):
    service = start_service(copy_data_dir(migrated, tmp_path / "data"), own_server=True, calls=calls)
    yield service
    try:
        service.serve.stop(timeout=60)
    finally:
        stop_embedded_postgres(service.data_dir)


@pytest.fixture
def shared_service(tmp_path, calls):
    service = start_service(tmp_path / "data", own_server=False, calls=calls)
    yield service
    service.serve.stop(timeout=60)


def under_load(service: Service, fault, *, background: bool = False):
    load = Load(service.port, service.token, service.workflow_id, background=background)
    timer = threading.Timer(FAULT_AT, fault)
    timer.start()
    try:
        answers = load.run(clients=CLIENTS, seconds=SECONDS)
    finally:
        timer.cancel()
    return answers


def check(service: Service, answers, fault: str) -> None:
    # the service answers again, without a person
    wait_until(lambda: _answers(service), 90, "the service to answer again")

    def rows():
        with psycopg.connect(service.conninfo, connect_timeout=5) as db:
            executions = db.execute(
                "SELECT idempotency_key, status, node_results->'count' FROM workflow_execution "
                "WHERE workflow_id = %s", [service.workflow_id]).fetchall()
            counter = db.execute("SELECT value FROM workflow_state WHERE workflow_id = %s AND key = 'runs'",
                                 [service.workflow_id]).fetchone()
        return executions, (counter[0] if counter else 0)

    wait_until(lambda: not [r for r in rows()[0] if r[1] in ("queued", "running")], 60,
               "housekeeping to close every run")
    executions, saved = rows()
    # the increments the records say: a success's, and those of runs recorded first that were
    # interrupted or failed after their increment committed with its record
    recorded = sorted(r[2]["data"]["value"] for r in executions if r[2] and r[2].get("success"))
    by_key = {r[0]: r[1] for r in executions}
    learned = {k: v for k, v in answers.outcomes.items() if v != "unknown"}
    acknowledged = [k for k, v in learned.items() if v == "success"]
    lost = [k for k in acknowledged if by_key.get(k) != "success"]
    mismatched = {k: (v, by_key.get(k)) for k, v in learned.items() if by_key.get(k) != v}
    statuses = {}
    for row in executions:
        statuses[row[1]] = statuses.get(row[1], 0) + 1
    print(
        f"\n[{fault}, {service.kind}] runs asked {len(answers.outcomes)}, acknowledged {len(acknowledged)}, "
        f"saved {saved}, lost {len(lost)}, double-counted {max(0, len(recorded) - len(set(recorded)))}, "
        f"executions {statuses}, answers {dict(answers.statuses)}, refused connections {answers.refused}, "
        f"stuck running 0"
    )
    assert answers.violations == []
    assert "unknown" not in answers.outcomes.values(), "a client never learned what happened to its run"
    assert lost == []
    assert mismatched == {}
    assert saved == len(recorded), "an increment without its record, or the reverse"
    assert recorded == list(range(1, saved + 1)), "each increment belongs to exactly one run's record"
    assert len(by_key) == len(executions), "an Idempotency-Key ran twice"
    if service.kind == ONE_COMMIT:
        # all or nothing: a run cut short left no record to close, and its retry ran it
        assert "interrupted" not in statuses, statuses


def _answers(service: Service) -> bool:
    try:
        return call(service.port, service.token, "GET", "/api/actions/")[0] == 200
    except OSError:
        return False


@own_embedded_server
def test_kill_9_of_postgres(own_service):
    answers = under_load(own_service, lambda: os.kill(postmaster_pid(own_service.data_dir), signal.SIGKILL))

    own_service.serve.wait_for_line("restarted it", 60, stream="err")
    check(own_service, answers, "kill -9 postgres")


@own_embedded_server
def test_kill_9_of_postgres_under_queued_runs(own_service):
    # the worker's runs lose their database too: a run in one commit leaves its execution queued
    # and its job fails; housekeeping queues it again (requeue_orphaned_runs)
    answers = under_load(own_service, lambda: os.kill(postmaster_pid(own_service.data_dir), signal.SIGKILL),
                         background=True)

    own_service.serve.wait_for_line("restarted it", 60, stream="err")
    check(own_service, answers, "kill -9 postgres, queued runs")


@own_embedded_server
def test_fast_stop_of_postgres(own_service):
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    def fast_stop() -> None:
        # as the embedded server's own system user when we are root (Postgres refuses root)
        user = "embedded_postgres" if os.geteuid() == 0 else None
        subprocess.run([str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(own_service.data_dir / "postgres"), "stop",
                        "-m", "fast", "-w", "-t", "30"], check=True, capture_output=True, timeout=60, user=user)

    answers = under_load(own_service, fast_stop)

    own_service.serve.wait_for_line("restarted it", 60, stream="err")
    check(own_service, answers, "fast stop of postgres")


def test_kill_9_of_the_web_server(shared_service):
    web = psutil.Process(shared_service.pid_of("web server (gunicorn)"))

    def kill_the_web_processes() -> None:
        # the gunicorn master and the workers serving requests at that instant, mid-run
        for process in [*web.children(), web]:
            process.send_signal(signal.SIGKILL)

    answers = under_load(shared_service, kill_the_web_processes)

    check(shared_service, answers, "kill -9 web server")


def test_kill_9_of_the_worker(shared_service):
    worker = shared_service.pid_of("worker")

    answers = under_load(shared_service, lambda: os.kill(worker, signal.SIGKILL), background=True)

    check(shared_service, answers, "kill -9 worker")

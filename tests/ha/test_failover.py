"""A primary that dies loses nothing: the real service (`manage.py serve`: gunicorn and a worker) on
a Patroni cluster of three Postgres 15 nodes (tests/ha/cluster.py), under load, while the primary
is killed, and while it is switched over on purpose (docs/reliability.md, "Failover on Patroni").

The load: careful API clients running a counter, each run with its own Idempotency-Key (some
waited for, some queued for the worker: ``?async=true``), retrying after a 503 or a lost
connection with the same key and polling a run found still going (tests/faults/load.py); and a
monitor on a schedule of one tick a second, incrementing its cursor. After each fault:

- every run a client was told succeeded is in the database, and the counter holds exactly the
  runs recorded ``success`` (none lost, none counted twice); what is stored lies between what was
  acknowledged and what was acknowledged plus what no client learned (in doubt);
- no run is left ``queued`` or ``running``;
- every schedule tick ran at most once, and the monitor's cursor is exactly its successful ticks;
- no answer was a 500 or carried driver text; a write succeeds again within 15 s of the kill;
- each process's log says once that the database went away and once that writes work again.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

from tests.executions.graphs import counter_graph
from tests.faults.load import Load
from tests.faults.test_faults import FAST, call
from tests.ha.cluster import Cluster, missing
from tests.ops.serving import Managed, free_port

pytestmark = pytest.mark.ha

CLIENTS, QUEUING_CLIENTS = 3, 1
SECONDS, FAULT_AT = 24.0, 5.0
FIRST_WRITE_BOUND = 15.0  # seconds from the kill to the first successful write (issue 38)
SETTLE_SECONDS = 60


class TimedLoad(Load):
    """Load that keeps when each answer to a run's request came: (moment, HTTP status (0: no answer),
    whether it recorded a run, i.e. wrote: a new execution, or a replay of one that succeeded)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.timeline: list[tuple[float, int, bool]] = []

    def _request(self, method: str, path: str, body: Any, key: str | None) -> tuple[int, Any]:
        status, answer = super()._request(method, path, body, key)
        if method == "POST":
            wrote = status in (201, 202) or (status == 200 and (answer or {}).get("status") == "success")
            with self.answers.lock:
                self.timeline.append((time.monotonic(), status, wrote))
        return status, answer


@dataclass
class Service:
    serve: Managed
    port: int
    token: str
    counter: str
    monitor: str
    logs: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def cluster():
    if reason := missing():
        pytest.fail(reason)  # in CI this tier must run: .ci/run installs what it needs
    cluster = Cluster.create()
    try:
        cluster.start()
        with psycopg.connect(cluster.connect_url(cluster.leader(), "postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE keeperstate")
        yield cluster
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def service(cluster, tmp_path_factory):
    """`manage.py serve` on the cluster (it migrates), the demo's token, a counter and a monitor."""
    env = {**FAST, "DATABASE_URL": cluster.database_url, "KEEPERSTATE_MIN_INTERVAL": "1",
           "KEEPERSTATE_SCHEDULER_POLL_SECONDS": "0.2"}
    data_dir = tmp_path_factory.mktemp("ha-serve")
    port = free_port()
    serve = Managed("serve", str(port), "--web-workers", "2", data_dir=data_dir, **env)
    try:
        serve.wait_for_line("stop with Ctrl-C", 240)
        token = Managed("create_api_token", "demo", data_dir=data_dir, **env)
        assert token.process.wait(timeout=120) == 0, token.output()
        token.stop()
        key = token.out[-1].strip()
        ids = []
        for name, graph in (("Counter", counter_graph("Manual")),
                            ("Monitor", counter_graph("Schedule", key="cursor", interval=1, overlap="allow"))):
            status, answer = call(port, key, "POST", "/api/workflows/", {"name": name, "nodes": graph[0],
                                                                        "edges": graph[1]})
            assert status == 201, answer
            ids.append(answer["id"])
        status, answer = call(port, key, "PATCH", f"/api/workflows/{ids[1]}/", {"active": True})
        assert status == 200, answer
        yield Service(serve, port, key, ids[0], ids[1])
    finally:
        code = serve.stop(timeout=60)
        print(f"\n--- serve (exit {code}) ---\n" + "\n".join(serve.out[-40:] + serve.err[-80:]))


def query(cluster: Cluster, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(cluster.database_url, connect_timeout=10) as conn:
        return conn.execute(sql, params).fetchall()


def workflow_state(cluster: Cluster, workflow: str, key: str) -> int:
    rows = query(cluster, "SELECT value::text::bigint FROM workflow_state s JOIN workflow w ON w.id = s.workflow_id "
                          "AND w.organization_id = s.organization_id WHERE w.id = %s AND s.key = %s", [workflow, key])
    return rows[0][0] if rows else 0


def runs(cluster: Cluster, workflow: str) -> dict[str, list[tuple[Any, ...]]]:
    rows = query(cluster, "SELECT id::text, status, idempotency_key, scheduled_for FROM workflow_execution "
                          "WHERE workflow_id = %s", [workflow])
    by_status: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        by_status.setdefault(row[1], []).append(row)
    return by_status


def under_load(service: Service, fault) -> tuple[list[TimedLoad], float]:
    loads = [TimedLoad(service.port, service.token, service.counter),
             TimedLoad(service.port, service.token, service.counter, background=True)]
    moments: list[float] = []
    timer = threading.Timer(FAULT_AT, lambda: moments.append(fault()))
    threads = [threading.Thread(target=loads[0].run, kwargs={"clients": CLIENTS, "seconds": SECONDS}),
               threading.Thread(target=loads[1].run, kwargs={"clients": QUEUING_CLIENTS, "seconds": SECONDS})]
    timer.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=SECONDS + 180)
    timer.cancel()
    assert moments, "the fault did not happen"
    return loads, moments[0]


def settle(cluster: Cluster, service: Service) -> None:
    """The queued runs run, the runs of the dead connections are closed: nothing left going."""
    Cluster.wait_for(
        lambda: not any(runs(cluster, w).get(s) for w in (service.counter, service.monitor)
                        for s in ("queued", "running")),
        SETTLE_SECONDS, "every run to finish or be closed as interrupted",
    )


@dataclass
class Before:
    """The runs the database held before a test's load (in any state): acknowledged and stored
    compare what the load added. The counter and the cursor are compared whole, with every run."""

    counter_runs: set[str]
    ticks: set[Any]

    @classmethod
    def of(cls, cluster: Cluster, service: Service) -> Before:
        return cls({row[0] for rows in runs(cluster, service.counter).values() for row in rows},
                   {row[3] for rows in runs(cluster, service.monitor).values() for row in rows})


def figures(cluster: Cluster, service: Service, loads: list[TimedLoad], fault_at: float,
            before: Before) -> dict[str, Any]:
    outcomes: dict[str, str] = {}
    executions: dict[str, str] = {}
    violations: list[str] = []
    statuses: Counter[int] = Counter()
    timeline = sorted(point for load in loads for point in load.timeline)
    for load in loads:
        outcomes.update(load.answers.outcomes)
        executions.update(load.answers.executions)
        violations += load.answers.violations
        statuses.update(load.answers.statuses)
    all_counter_runs = runs(cluster, service.counter)
    counter_runs = {status: [row for row in rows if row[0] not in before.counter_runs]
                    for status, rows in all_counter_runs.items()}
    stored = {row[0] for row in counter_runs.get("success", [])}
    acknowledged = {executions[k] for k, status in outcomes.items() if status == "success"}
    first_write = next((t for t, _status, wrote in timeline if t > fault_at and wrote), None)
    first_failure = next((t for t, status, _wrote in timeline if t > fault_at and status in (0, 503)), None)
    recovered = None if first_failure is None else next(
        (t for t, _status, wrote in timeline if t > first_failure and wrote), None)
    monitor_runs = runs(cluster, service.monitor)
    ticks = [row[3] for rows in monitor_runs.values() for row in rows]
    return {
        "acknowledged": len(acknowledged),
        "stored": len(stored),
        "in_doubt": sum(1 for status in outcomes.values() if status == "unknown"),
        "lost": len(acknowledged - stored),
        "counter": workflow_state(cluster, service.counter, "runs"),
        "all_stored": len(all_counter_runs.get("success", [])),
        "stuck": sum(len(runs(cluster, w).get(s, [])) for w in (service.counter, service.monitor)
                     for s in ("queued", "running")),
        "interrupted": len(counter_runs.get("interrupted", [])),
        "first_write_seconds": None if first_write is None else round(first_write - fault_at, 1),
        # how long writes failed: from the first failed answer after the fault to the next write
        "writes_failed_seconds": 0.0 if first_failure is None else (
            None if recovered is None else round(recovered - first_failure, 1)),
        "unavailable_answers": sum(1 for t, status, _wrote in timeline if t > fault_at and status == 503
                                   and (first_write is None or t < first_write)),
        "statuses": dict(statuses),
        "violations": violations,
        "ticks": len(ticks),
        "distinct_ticks": len(set(ticks)),
        "ticks_succeeded": len(monitor_runs.get("success", [])),
        "cursor": workflow_state(cluster, service.monitor, "cursor"),
        "new_ticks": len(set(ticks) - before.ticks),
    }


def assert_nothing_lost(found: dict[str, Any]) -> None:
    assert found["violations"] == [], "a 500, or driver text in an answer"
    assert found["lost"] == 0, "an acknowledged run is not stored"
    assert found["counter"] == found["all_stored"], "an increment without its success record, or one counted twice"
    assert found["acknowledged"] <= found["stored"] <= found["acknowledged"] + found["in_doubt"]
    assert found["stuck"] == 0
    assert found["ticks"] == found["distinct_ticks"], "a schedule tick ran twice"
    assert found["cursor"] == found["ticks_succeeded"], "the monitor's cursor is not its successful ticks"
    assert found["first_write_seconds"] is not None, "no write succeeded after the fault"
    assert found["first_write_seconds"] <= FIRST_WRITE_BOUND


def outage_lines(service: Service, since: int) -> tuple[int, int, int]:
    """In serve's output since line ``since``: outages noticed, ends of outages, tracebacks."""
    lines = (service.serve.out + service.serve.err)[since:]
    went = sum(1 for line in lines if "database unavailable (" in line)
    back = sum(1 for line in lines if "database writable again after" in line)
    tracebacks = sum(1 for line in lines if "Traceback (most recent call last)" in line)
    return went, back, tracebacks


def report(name: str, found: dict[str, Any], went: int, back: int, tracebacks: int) -> None:
    print(f"\n[ha] {name}: first write {found['first_write_seconds']} s after the fault, writes failed for "
          f"{found['writes_failed_seconds']} s "
          f"({found['unavailable_answers']} answers 503 meanwhile); acknowledged {found['acknowledged']}, "
          f"stored {found['stored']}, in doubt {found['in_doubt']}, lost {found['lost']}, counted twice "
          f"{found['counter'] - found['all_stored']}, stuck {found['stuck']}, interrupted {found['interrupted']}; "
          f"ticks {found['new_ticks']} in the load, {found['ticks']} in all (distinct {found['distinct_ticks']}, "
          f"succeeded {found['ticks_succeeded']}), "
          f"cursor {found['cursor']}; answers {found['statuses']}; log: {went} outage line(s), {back} "
          f"'writable again' line(s), {tracebacks} traceback(s)")


def test_the_primary_killed_under_load_loses_nothing_and_rejoins_as_a_replica(cluster, service):
    # given the service under load, and the cluster's primary
    primary = cluster.leader()
    log_mark, before = len(service.serve.out) + len(service.serve.err), Before.of(cluster, service)

    # when the primary's postmaster and its Patroni die at once (kill -9), a few seconds in
    loads, killed_at = under_load(service, lambda: cluster.kill(primary))
    settle(cluster, service)

    # then nothing acknowledged is lost, nothing counted twice, nothing stuck, each tick once
    found = figures(cluster, service, loads, killed_at, before)
    went, back, tracebacks = outage_lines(service, log_mark)
    report("kill -9 of the primary", found, went, back, tracebacks)
    assert_nothing_lost(found)
    assert cluster.leader() not in (None, primary)
    # and each process said once that the database went, once that writes work again; no traceback
    assert 1 <= went <= 6
    assert back >= 1
    assert tracebacks == 0

    # when the killed node's Patroni starts again, it rejoins as a replica, rewound with pg_rewind
    cluster.start_node(primary)
    cluster.wait_for(lambda: primary in cluster.replicas(), 120, f"{primary.name} to rejoin as a replica")
    assert "pg_rewind" in primary.log.read_text(errors="replace")
    cluster.wait_for(cluster.sync_standby, 60, "a synchronous standby again")


def test_a_planned_switchover_under_load_loses_nothing(cluster, service):
    # given a cluster of three again, and the service under load
    cluster.wait_for(lambda: len(cluster.replicas()) == 2 and cluster.sync_standby(), 120, "two replicas")
    leader, candidate = cluster.leader(), cluster.sync_standby()
    log_mark, before = len(service.serve.out) + len(service.serve.err), Before.of(cluster, service)

    def switchover() -> float:
        moment = time.monotonic()
        done = cluster.patronictl("switchover", "--leader", leader.name, "--candidate", candidate.name, "--force")
        assert done.returncode == 0, done.stdout + done.stderr
        return moment

    # when the primary is switched over to its synchronous standby on purpose
    loads, switched_at = under_load(service, switchover)
    settle(cluster, service)

    # then, as for a kill: nothing lost, counted twice or stuck
    found = figures(cluster, service, loads, switched_at, before)
    report("patronictl switchover", found, *outage_lines(service, log_mark))
    assert_nothing_lost(found)
    assert cluster.leader() is candidate
    cluster.wait_for(lambda: leader in cluster.replicas(), 120, f"{leader.name} to follow as a replica")


def test_the_primary_runs_as_docs_production_md_configures_it(cluster):
    # synchronous replication to a named standby, hint bits logged for pg_rewind
    show = {name: query(cluster, f"SHOW {name}")[0][0]
            for name in ("wal_log_hints", "synchronous_commit", "synchronous_standby_names")}
    assert (show["wal_log_hints"], show["synchronous_commit"]) == ("on", "on")
    assert re.search(r"node\d", show["synchronous_standby_names"]), show

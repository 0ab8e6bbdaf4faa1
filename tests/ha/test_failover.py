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
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from tests.executions.graphs import counter_graph
from tests.faults.load import Load
from tests.faults.test_faults import FAST, call
from tests.ha.cluster import FIGURES, Cluster, missing
from tests.ops.serving import Managed, free_port

pytestmark = pytest.mark.ha

CLIENTS, QUEUING_CLIENTS = 3, 1
SECONDS, FAULT_AT = 24.0, 5.0
FIRST_WRITE_BOUND = 15.0  # seconds from the kill to the first successful write (issue 38)
SETTLE_SECONDS = 60
STUCK_SECONDS = 10  # a tick queued or running this long after its second is stuck


class TimedLoad(Load):
    """Load that keeps when each answer to a run's request came: (moment, HTTP status (0: no answer),
    whether it recorded a run, i.e. wrote: a new execution, or a replay of one that succeeded; when
    the request was sent)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.timeline: list[tuple[float, int, bool, float]] = []

    def _request(self, method: str, path: str, body: Any, key: str | None) -> tuple[int, Any]:
        sent = time.monotonic()
        status, answer = super()._request(method, path, body, key)
        if method == "POST":
            wrote = status in (201, 202) or (status == 200 and (answer or {}).get("status") == "success")
            with self.answers.lock:
                self.timeline.append((time.monotonic(), status, wrote, sent))
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


def query(source: Cluster | psycopg.Connection, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the cluster's primary, or on an open connection (a snapshot)."""
    if isinstance(source, psycopg.Connection):
        return source.execute(sql, params).fetchall()
    with psycopg.connect(source.database_url, connect_timeout=10) as conn:
        return conn.execute(sql, params).fetchall()


def workflow_state(source: Cluster | psycopg.Connection, workflow: str, key: str) -> int:
    rows = query(source, "SELECT value::text::bigint FROM workflow_state s JOIN workflow w ON w.id = s.workflow_id "
                         "AND w.organization_id = s.organization_id WHERE w.id = %s AND s.key = %s", [workflow, key])
    return rows[0][0] if rows else 0


def runs(source: Cluster | psycopg.Connection, workflow: str) -> dict[str, list[tuple[Any, ...]]]:
    rows = query(source, "SELECT id::text, status, idempotency_key, scheduled_for FROM workflow_execution "
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
    # One snapshot of the database: the monitor goes on ticking while the figures are read, so its
    # runs and its cursor must be read as of one moment (read apart, a tick between the two reads
    # shows a cursor one past its successful ticks).
    with psycopg.connect(cluster.database_url, connect_timeout=10) as snapshot:
        snapshot.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        all_counter_runs = runs(snapshot, service.counter)
        monitor_runs = runs(snapshot, service.monitor)
        counter = workflow_state(snapshot, service.counter, "runs")
        cursor = workflow_state(snapshot, service.monitor, "cursor")
        now = query(snapshot, "SELECT now()")[0][0]
    counter_runs = {status: [row for row in rows if row[0] not in before.counter_runs]
                    for status, rows in all_counter_runs.items()}
    stored = {row[0] for row in counter_runs.get("success", [])}
    acknowledged = {executions[k] for k, status in outcomes.items() if status == "success"}
    # The first write after the fault is the first answer to a request sent after the first failed
    # answer (or after the fault, when none failed): a request in flight at the kill may be
    # answered after it, written before it.
    first_failure = next((t for t, status, _wrote, _sent in timeline if t > fault_at and status in (0, 503)), None)
    first_write = next((t for t, _status, wrote, sent in timeline if sent > (first_failure or fault_at) and wrote),
                       None)
    recovered = None if first_failure is None else first_write
    ticks = [row[3] for rows in monitor_runs.values() for row in rows]
    return {
        "acknowledged": len(acknowledged),
        "stored": len(stored),
        "in_doubt": sum(1 for status in outcomes.values() if status == "unknown"),
        "lost": len(acknowledged - stored),
        "counter": counter,
        "all_stored": len(all_counter_runs.get("success", [])),
        # the load is over, so a counter run not ended is stuck; the monitor's tick of this second
        # may be on its way through the queue: one is stuck when its second is long gone
        "stuck": sum(len(all_counter_runs.get(s, [])) for s in ("queued", "running")) + sum(
            1 for s in ("queued", "running") for row in monitor_runs.get(s, [])
            if row[3] is None or row[3] < now - timedelta(seconds=STUCK_SECONDS)),
        "interrupted": len(counter_runs.get("interrupted", [])),
        "first_write_seconds": None if first_write is None else round(first_write - fault_at, 1),
        # how long writes failed: from the first failed answer after the fault to the next write
        "writes_failed_seconds": 0.0 if first_failure is None else (
            None if recovered is None else round(recovered - first_failure, 1)),
        "unavailable_answers": sum(1 for t, status, _wrote, _sent in timeline if t > fault_at and status == 503
                                   and (first_write is None or t < first_write)),
        "statuses": dict(statuses),
        "violations": violations,
        "ticks": len(ticks),
        "distinct_ticks": len(set(ticks)),
        "ticks_succeeded": len(monitor_runs.get("success", [])),
        "cursor": cursor,
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


def outage_lines(service: Service, since: int) -> tuple[int, int, list[str]]:
    """In serve's output since line ``since``: outages noticed, ends of outages, and each traceback
    (its line and the 30 after it, so that a failure names the code that raised)."""
    lines = (service.serve.out + service.serve.err)[since:]
    went = sum(1 for line in lines if "database unavailable (" in line)
    back = sum(1 for line in lines if "database writable again after" in line)
    tracebacks = ["\n".join(lines[i:i + 30]) for i, line in enumerate(lines)
                  if "Traceback (most recent call last)" in line]
    return went, back, tracebacks


def report(name: str, found: dict[str, Any], went: int, back: int, tracebacks: list[str]) -> None:
    line = (f"[ha] {name}: first write {found['first_write_seconds']} s after the fault, writes failed for "
            f"{found['writes_failed_seconds']} s "
            f"({found['unavailable_answers']} answers 503 meanwhile); acknowledged {found['acknowledged']}, "
            f"stored {found['stored']}, in doubt {found['in_doubt']}, lost {found['lost']}, counted twice "
            f"{found['counter'] - found['all_stored']}, stuck {found['stuck']}, interrupted {found['interrupted']}; "
            f"ticks {found['new_ticks']} in the load, {found['ticks']} in all (distinct {found['distinct_ticks']}, "
            f"succeeded {found['ticks_succeeded']}), "
            f"cursor {found['cursor']}; answers {found['statuses']}; log: {went} outage line(s), {back} "
            f"'writable again' line(s), {len(tracebacks)} traceback(s)")
    print("\n" + line)
    FIGURES.append(line)
    for text in tracebacks:
        print(f"[ha] traceback in serve's output:\n{text}")


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
    assert tracebacks == [], tracebacks[0][:2000]

    # when the killed node's Patroni starts again, it rejoins as a replica, rewound with pg_rewind
    cluster.start_node(primary)
    cluster.wait_for(lambda: primary in cluster.replicas(), 120, f"{primary.name} to rejoin as a replica")
    assert "pg_rewind" in primary.log.read_text(errors="replace")
    cluster.wait_for(cluster.sync_standby, 60, "a synchronous standby again")


def test_a_planned_switchover_under_load_loses_nothing(cluster, service):
    # given a cluster of three again, and the service under load
    cluster.start_stopped()
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

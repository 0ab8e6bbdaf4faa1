"""Benchmark whole runs, end to end, against the raw floor of their own statements, in one run.

Two workflows: the 4-node block monitor (State Get → Condition → State Set with compare-and-set)
and a 1-node counter (State Increment). Each is measured
- through the HTTP stack: gunicorn with N web processes of 4 threads (as `serve` and the
  production command run it), clients POSTing /api/workflows/<id>/execute/ at concurrency 1, 4
  and 16 over a kept-alive connection each, as an integration's HTTP session does (each client
  its own workflow, so the figures measure the service, not contention on one key);
- through the webhook: one client POSTing /hooks/<id>/?wait=10 (the run in the web process, in
  the same slices as the API's one client, so the two p50s compare); 4 clients POSTing
  /hooks/<id>/ (202) while two workers run what they queue, all at once; and the same with the
  workers held while the webhooks arrive, then released to drain them (ADR 0085);
- through the queue: M workers draining a burst of queued executions, queued in one transaction
  so the workers meet a backlog (a queue after an outage), from its commit to each run's end;
- as its floor: the very statements one run sends (captured from a real run, the execution id
  renewed each time) replayed raw through psycopg in the run's own transactions (a statement sent
  in autocommit alone, an atomic block's statements between one BEGIN and its COMMIT), with the
  service's driver settings (prepared statements or not). The floor, one API client and one
  waited-webhook client on the first web process take turns in blocks of 10 runs, so a drift of
  the disk's flush time or a load spike on a shared machine reaches all three alike.
The monitor's replayed compare-and-set matches no row after its first replay, which makes the
floor a little cheaper than the real run: the ratios err against us. One more line measures the
HTTP stack alone (a 404 with no database work); with the floor it bounds the ratio this stack
allows, printed beside the target.

Per run, counted rather than timed: the statements, round trips and commits one API run sends
(keeperstate.ops.round_trips, on an in-process request with a token, as served: its own
transactions, the kept connection's health check), beside their budget
(tests/executions/test_round_trips.py holds them); and the CPU time of the serving process per
run (user + system, of the gunicorn worker or the job worker, over the runs it served).

The last line is JSON. Targets, printed and never a gate (DESIGN.md §10, issues 13, 24 and 43):
a run's throughput at concurrency 1 ≥ 0.6 (monitor) and ≥ 0.45 (counter) of its statements'
floor; runs/s grows with web processes up to the cores; a waited webhook's p50 ≤ 1.3 × the
API's; queued webhooks drained by two workers ≥ the API's runs/s at one client (the drain alone,
ADR 0085: taken in and run at once, the runs cannot outpace the web's 202s).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import http.client
import io
import itertools
import json
import logging
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import psutil
import psycopg
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connection, transaction
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone

from keeperstate.accounts.models import Membership, Organization
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import queue_run
from keeperstate.ops.database import database_url
from keeperstate.ops.env import child_environment
from keeperstate.ops.round_trips import counting, sent_ahead
from keeperstate.ops.schema import require_migrated
from keeperstate.workflows.examples import block_monitor_graph
from keeperstate.workflows.models import Workflow

COUNTER_NODES = [
    {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
     "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": "Manual", "sampleInput": {}}}},
    {"id": "count", "type": "action", "position": {"x": 0, "y": 120},
     "data": {"label": "Count", "type": "action", "config": {"actionType": "State Increment", "key": "runs"}}},
]
COUNTER_EDGES = [{"id": "e1", "source": "trigger", "target": "count"}]
CONCURRENCY = (1, 4, 16)
# A whole run at one client against its statements' floor: how far Python and HTTP keep it from it.
TARGETS = {"monitor": 0.6, "counter": 0.45}
# What one API run with a token sends, as tests/executions/test_round_trips.py holds it
# (docs/benchmarks.md, "Round trips per run").
BUDGETS = {
    "counter": {"statements": 5, "round_trips": 4, "commits": 1},
    "monitor": {"statements": 6, "round_trips": 5, "commits": 1},
}
QUEUE_WORKERS = 2  # the queued webhooks' workers: two should drain as fast as the API answers one client
EXPECTED = {"api": 201, "webhook": 200, "queued": 202}


@dataclasses.dataclass
class Transaction:
    atomic: bool  # False: one statement sent in autocommit
    statements: list[str]


@dataclasses.dataclass
class _Ran:
    spans: list[tuple[Any, Any]]  # each run's (queued_at, finished_at)
    cpu_ms: float  # the workers' CPU per run
    machine_cpu_ms: float  # every process's


class Command(BaseCommand):
    help = "Measure runs/s and latency through gunicorn and through workers against the runs' raw statements."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--seconds", type=float, default=3.0, help="duration of each HTTP measurement")
        parser.add_argument("--web", default="1,2", help="web process counts to measure (comma-separated)")
        parser.add_argument("--workers", default="1,2", help="worker counts for the queue measurement")
        parser.add_argument("--burst", type=int, default=60, help="queued runs per queue measurement")
        parser.add_argument("--threads", type=int, default=4, help="threads per web process (serve's default)")

    def handle(self, *args: Any, **options: Any) -> None:
        require_migrated()
        # The queue measurement defers its jobs from this process: one log line per job is noise here.
        logging.getLogger("procrastinate").setLevel(logging.WARNING)
        bench = RunBench(
            seconds=options["seconds"],
            web=[int(n) for n in options["web"].split(",")],
            workers=[int(n) for n in options["workers"].split(",")],
            burst=options["burst"],
            threads=options["threads"],
            out=self.stdout,
        )
        # The capture and the queue measurement start runs in this process: lift the token's API
        # and webhook rates and the organization's runs per minute here too, as spawn() does for the
        # processes measured (all are counted in Postgres, across processes).
        rest_framework: dict[str, Any] = dict(settings.REST_FRAMEWORK)
        rates = {**rest_framework["DEFAULT_THROTTLE_RATES"], "api_user": "100000000/min", "webhook": "100000000/min"}
        rest_framework["DEFAULT_THROTTLE_RATES"] = rates
        with override_settings(KEEPERSTATE_ORG_RUNS_PER_MINUTE=100_000_000, REST_FRAMEWORK=rest_framework):
            try:
                figures = bench.run()
            finally:
                bench.cleanup()
        self.stdout.write(json.dumps(figures, sort_keys=True))


class RunBench:
    def __init__(self, *, seconds: float, web: list[int], workers: list[int], burst: int, out: Any, threads: int):
        self.seconds, self.web, self.workers, self.burst, self.out = seconds, web, workers, burst, out
        self.threads = threads
        suffix = uuid.uuid4().hex[:10]
        self.org = Organization.objects.create(name="bench runs", slug=f"bench-runs-{suffix}")
        self.user = get_user_model().objects.create_user(username=f"bench-{suffix}")
        Membership.objects.create(user=self.user, organization=self.org, role=Membership.Role.OWNER)
        buffer = io.StringIO()
        call_command("create_api_token", self.user.get_username(), stdout=buffer)
        self.token = buffer.getvalue().strip().splitlines()[-1]
        self.url = database_url(connection.settings_dict)
        self.children: list[subprocess.Popen[bytes]] = []
        self.blocks: dict[uuid.UUID, Iterator[int]] = {}

    def cleanup(self) -> None:
        for child in self.children:
            _stop(child)
        self.org.delete()
        self.user.delete()

    def workflows(self, kind: str, count: int) -> list[Workflow]:
        """Workflows whose trigger is a Webhook and which are active, so the API's execute and the
        webhook run the very same workflow (the API runs any trigger)."""
        nodes, edges = block_monitor_graph() if kind == "monitor" else (COUNTER_NODES, COUNTER_EDGES)
        nodes = copy.deepcopy(nodes)
        trigger: dict[str, Any] = nodes[0]
        trigger["data"]["config"]["triggerType"] = "Webhook"
        return [
            Workflow.objects.create(organization=self.org, name=f"{kind} {n}", nodes=nodes, edges=edges, active=True)
            for n in range(count)
        ]

    def run(self) -> dict[str, Any]:
        figures: dict[str, Any] = {"web": {}, "webhook": {}, "queue": {}, "floor": {}, "statements": {}, "sent": {},
                                   "cpu_ms": {}}
        for kind in ("monitor", "counter"):
            sent = figures["sent"][kind] = self.count(kind)
            budget = BUDGETS[kind]
            verdict = "within" if all(sent[name] <= most for name, most in budget.items()) else "OVER"
            self.out.write(f"{kind}: {sent['statements']} statements, {sent['round_trips']} round trips, "
                           f"{sent['commits']} commit(s) per API run (+{sent['unlogged_writes']} unlogged); budget "
                           f"{budget['statements']}/{budget['round_trips']}/{budget['commits']}: {verdict}")
        self.out.write(f"{'measurement':<42}{'runs/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'floor/s':>9}{'ratio':>7}"
                       f"{'cpu ms':>8}")
        for kind in ("monitor", "counter"):
            transactions = self.capture(kind)
            count = sum(len(group.statements) for group in transactions)
            figures["statements"][kind] = {"statements": count, "transactions": len(transactions)}
            floor: dict[str, float] = {}
            for processes in self.web:
                port = self.start_web(processes)
                for clients in CONCURRENCY:
                    if floor:
                        measured = self.http(port, kind, clients)
                    else:
                        floor, measured, hooked = self.floor_and_one_client(port, kind, transactions)
                        figures["floor"][kind] = floor
                        figures["webhook"][f"{kind}.wait.web{processes}.c1"] = hooked
                        figures["cpu_ms"][f"{kind}.api.c1"] = measured["cpu_ms"]
                        figures["cpu_ms"][f"{kind}.webhook.wait.c1"] = hooked["cpu_ms"]
                        self.line(f"{kind}: floor, {count} stmts/{len(transactions)} tx", floor, floor["p50_ms"],
                                  floor["p95_ms"])
                        self.line(f"{kind}: webhook ?wait, {processes} web, 1 client", hooked["runs_per_s"],
                                  hooked["p50_ms"], hooked["p95_ms"], floor["runs_per_s"], hooked["cpu_ms"])
                        if "stack" not in figures:
                            figures["stack"] = self.stack(port)
                            self.line("HTTP stack alone: a 404, 1 client", figures["stack"]["runs_per_s"],
                                      figures["stack"]["p50_ms"], figures["stack"]["p95_ms"])
                    name = f"{kind}.web{processes}.c{clients}"
                    figures["web"][name] = measured
                    self.line(f"{kind}: {processes} web, {clients} clients", measured["runs_per_s"],
                              measured["p50_ms"], measured["p95_ms"], floor["runs_per_s"], measured.get("cpu_ms"))
                if processes == self.web[0]:
                    queued = self.queued_webhooks(port, kind, clients=4, workers=QUEUE_WORKERS)
                    together, drained = queued["together"], queued["drained"]
                    figures["webhook"][f"{kind}.queued.web{processes}.c4.workers{QUEUE_WORKERS}"] = together
                    figures["webhook"][f"{kind}.drained.web{processes}.c4.workers{QUEUE_WORKERS}"] = drained
                    figures["cpu_ms"][f"{kind}.webhook.queued.worker"] = together["cpu_ms"]
                    figures["cpu_ms"][f"{kind}.webhook.drained.worker"] = drained["cpu_ms"]
                    self.line(f"{kind}: webhook 202 + {QUEUE_WORKERS} workers at once", together["runs_per_s"],
                              together["p50_ms"], together["p95_ms"], floor["runs_per_s"], together["cpu_ms"])
                    self.line(f"{kind}: webhook 202 alone, workers held", drained["intake_per_s"],
                              drained["intake_p50_ms"], None, cpu_ms=drained["intake_cpu_ms"])
                    self.line(f"{kind}: queued webhooks, {QUEUE_WORKERS} workers drain", drained["runs_per_s"],
                              drained["p50_ms"], drained["p95_ms"], floor["runs_per_s"], drained["cpu_ms"])
                    # What each way costs the two cores in all: the queued webhook's answer, its
                    # job's fetch and finish and its run, against the API's one request.
                    api = figures["web"][f"{kind}.web{processes}.c1"]
                    hook = together["machine_cpu_ms"]
                    self.out.write(f"{kind}: the machine's CPU per run, every process: API at 1 client "
                                   f"{api['machine_cpu_ms']:.2f} ms, queued webhook {hook:.2f} ms "
                                   f"({hook / max(api['machine_cpu_ms'], 1e-9):.2f}x); the drain alone "
                                   f"{drained['machine_cpu_ms']:.2f} ms")
                    # At once, the runs cannot outpace the web's 202s: on one machine this ratio
                    # says how fast one web process takes webhooks in as much as how workers keep up.
                    self.out.write(f"{kind}: webhooks taken in and run at once / the API at 1 client: "
                                   f"{together['runs_per_s'] / api['runs_per_s']:.2f} (the web alone answered "
                                   f"{drained['intake_per_s']:.0f} webhooks/s)")
                _stop(self.children.pop())
            for count in self.workers:
                measured = self.queue(kind, count)
                figures["queue"][f"{kind}.workers{count}"] = measured
                figures["cpu_ms"][f"{kind}.queue.workers{count}"] = measured["cpu_ms"]
                self.line(f"{kind}: queue, {count} worker(s)", measured["runs_per_s"], measured["p50_ms"],
                          measured["p95_ms"], floor["runs_per_s"], measured["cpu_ms"])
        figures["targets"] = self.targets(figures)
        for name, verdict in figures["targets"].items():
            ceiling = f" (the HTTP stack alone allows {verdict['ceiling']:.2f})" if "ceiling" in verdict else ""
            self.out.write(f"target {name}: {verdict['value']:.2f} (want {verdict['want']}) "
                           f"{'met' if verdict['met'] else 'NOT MET'}{ceiling}")
        return figures

    def line(self, name: str, runs: Any, p50: Any, p95: Any, floor: float | None = None,
             cpu_ms: float | None = None) -> None:
        rate = runs["runs_per_s"] if isinstance(runs, dict) else runs
        ratio = f"{rate / floor:>7.2f}" if floor else f"{'':>7}"
        fmt = lambda v: f"{v:>9.1f}" if v is not None else f"{'':>9}"  # noqa: E731
        cpu = f"{cpu_ms:>8.2f}" if cpu_ms is not None else ""
        self.out.write(f"{name:<42}{rate:>9.1f}{fmt(p50)}{fmt(p95)}{fmt(floor)}{ratio}{cpu}")

    def targets(self, figures: dict[str, Any]) -> dict[str, Any]:
        verdicts: dict[str, Any] = {}
        for kind in ("monitor", "counter"):
            c1 = figures["web"][f"{kind}.web{self.web[0]}.c1"]["runs_per_s"]
            floor = figures["floor"][kind]["runs_per_s"]
            ratio = c1 / floor
            # A run takes at least the HTTP stack's own time plus its statements': the best ratio
            # this stack allows, were authentication, the runner and the records free.
            ceiling = (1 / floor) / (1 / floor + 1 / figures["stack"]["runs_per_s"])
            want = TARGETS[kind]
            verdicts[f"{kind}.c1_vs_floor"] = {"value": ratio, "want": f">= {want}", "met": ratio >= want,
                                               "ceiling": ceiling}
            # A waited webhook answers as fast as the API's execute of the same workflow: one execution service.
            api_p50 = figures["web"][f"{kind}.web{self.web[0]}.c1"]["p50_ms"]
            hook_p50 = figures["webhook"][f"{kind}.wait.web{self.web[0]}.c1"]["p50_ms"]
            verdicts[f"{kind}.webhook_wait_p50_vs_api"] = {"value": hook_p50 / api_p50, "want": "<= 1.3",
                                                           "met": hook_p50 / api_p50 <= 1.3}
            # Queued webhooks (202) drained by two workers keep up with the API at one client (ADR 0085).
            queued = figures["webhook"][f"{kind}.drained.web{self.web[0]}.c4.workers{QUEUE_WORKERS}"]["runs_per_s"]
            verdicts[f"{kind}.webhook_queued_vs_api_c1"] = {"value": queued / c1, "want": ">= 1",
                                                            "met": queued >= c1}
            if len(self.web) > 1:
                low = figures["web"][f"{kind}.web{self.web[0]}.c16"]["runs_per_s"]
                high = figures["web"][f"{kind}.web{self.web[-1]}.c16"]["runs_per_s"]
                verdicts[f"{kind}.web_scaling"] = {"value": high / low, "want": "> 1", "met": high > low}
        return verdicts

    # -- the run's own statements, and their floor -------------------------------------------

    def count(self, kind: str) -> dict[str, int]:
        """What one API run with a token sends to Postgres, counted on the connection, as served:
        prepared statements as configured, its own transactions, the health check a request
        starts with (Django's request start, which the test client leaves out)."""
        workflow = self.workflows(kind, 1)[0]
        client = Client(HTTP_AUTHORIZATION=f"Token {self.token}")
        path = f"/api/workflows/{workflow.id}/execute/"
        for block in (100, 101, 102):  # warm: the key exists, the statements are prepared
            client.post(path, {"input": {"block": block}}, content_type="application/json")
        close_old_connections()
        with counting() as sent:
            response = client.post(path, {"input": {"block": 103}}, content_type="application/json")
        if response.status_code != EXPECTED["api"]:
            raise RuntimeError(f"the counted run answered {response.status_code}")
        return sent.as_dict()

    def capture(self, kind: str) -> list[Transaction]:
        """The SQL one API run sends, from authentication to the finished record, in the
        transactions it runs in: a statement outside an atomic block is sent alone in autocommit
        (no BEGIN or COMMIT of its own); the statements of an atomic block are one transaction,
        up to the COMMIT that ends it (two atomic blocks in a row stay two transactions)."""
        workflow = self.workflows(kind, 1)[0]
        client = Client(HTTP_AUTHORIZATION=f"Token {self.token}")
        path = f"/api/workflows/{workflow.id}/execute/"
        client.post(path, {"input": {"block": 1}}, content_type="application/json")  # warm caches
        sent: list[tuple[str, bool] | None] = []  # None: a COMMIT

        def note(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
            in_atomic = connection.in_atomic_block
            ahead = getattr(connection.connection, "aheads_sent", 0)
            result = execute(sql, params, many, context)
            # A statement the backend sent ahead of this one's transaction (the organization's run
            # count, keeperstate.ops.postgres) went before it, in autocommit.
            went_ahead = sent_ahead(connection.connection, getattr(connection.connection, "aheads_sent", 0) - ahead)
            sent.extend((sql, False) for sql in went_ahead)
            sent.append((connection.ops.last_executed_query(context["cursor"], sql, params), in_atomic))
            return result

        commit = connection.commit

        def noted_commit() -> None:
            commit()
            sent.append(None)

        connection.commit = noted_commit  # type: ignore[method-assign]  # Atomic's outermost exit commits here
        try:
            with connection.execute_wrapper(note):
                response = client.post(path, {"input": {"block": 2}}, content_type="application/json")
        finally:
            del connection.commit
        execution_id = response.json()["id"].replace("-", "")
        transactions: list[Transaction] = []
        open_block: Transaction | None = None
        for entry in sent:
            if entry is None:
                open_block = None
                continue
            sql, in_atomic = entry
            sql = sql.replace(execution_id, "{execution_id}")
            if not in_atomic:
                transactions.append(Transaction(atomic=False, statements=[sql]))
            elif open_block is None:
                open_block = Transaction(atomic=True, statements=[sql])
                transactions.append(open_block)
            else:
                open_block.statements.append(sql)
        if open_block is not None:
            raise RuntimeError("the captured run left a transaction open")
        return transactions

    def floor_and_one_client(
        self, port: int, kind: str, transactions: list[Transaction], block: int = 10
    ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
        """The floor, one API client and one waited-webhook client against the first web process,
        taking turns in blocks of ``block`` runs for three times the measurement time. Most of a
        run's floor is the disk flushing its commits, and on a shared machine that time drifts
        within seconds: runs taking turns this closely meet the same disk, so their ratio holds
        where slices of a second apart did not."""
        # The same driver settings as the service's connection: with prepared statements on
        # (KEEPERSTATE_DB_PREPARED_STATEMENTS, the default), both prepare a statement sent a
        # fifth time; with them off, neither does.
        prepare = (connection.settings_dict.get("OPTIONS") or {}).get("prepare_threshold")
        workflow = self.workflows(kind, 1)[0]
        blocks = self.blocks.setdefault(workflow.id, itertools.count(2))
        api = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        hook = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        with psycopg.connect(self.url, autocommit=True, prepare_threshold=prepare) as raw:
            def floor_run() -> None:
                execution_id = uuid.uuid4().hex
                for transaction in transactions:
                    if not transaction.atomic:  # autocommit: the statement is its own transaction
                        raw.execute(transaction.statements[0].replace("{execution_id}", execution_id))  # type: ignore[call-overload]
                        continue
                    with raw.transaction():
                        for sql in transaction.statements:
                            raw.execute(sql.replace("{execution_id}", execution_id))  # type: ignore[call-overload]

            def api_run() -> None:
                status = _post(api, f"/api/workflows/{workflow.id}/execute/", {"input": {"block": next(blocks)}},
                               self.token)
                if status != EXPECTED["api"]:
                    raise RuntimeError(f"api answered {status}")

            def hook_run() -> None:
                status = _hook(hook, f"/hooks/{workflow.id}/?wait=10", {"block": next(blocks)},
                               workflow.webhook_secret)
                if status != EXPECTED["webhook"]:
                    raise RuntimeError(f"webhook answered {status}")

            steps = {"floor": floor_run, "api": api_run, "webhook": hook_run}
            latencies: dict[str, list[float]] = {name: [] for name in steps}
            cpu: dict[str, float] = {name: 0.0 for name in steps}
            machine: dict[str, float] = {name: 0.0 for name in steps}
            serving = self.serving()
            try:
                for step in steps.values():  # warm: the connections open, the statements prepare
                    for _ in range(6):
                        step()
                deadline = time.monotonic() + 3 * self.seconds
                while time.monotonic() < deadline:
                    for name, step in steps.items():
                        before, machine_before = _cpu_seconds(serving), _machine_cpu_seconds()
                        for _ in range(block):
                            started = time.perf_counter()
                            step()
                            latencies[name].append(time.perf_counter() - started)
                        cpu[name] += _cpu_seconds(serving) - before
                        machine[name] += _machine_cpu_seconds() - machine_before
            finally:
                api.close()
                hook.close()
        # One client at a time: its throughput is one over its mean latency.
        floor, measured, hooked = (_summary(latencies[name], sum(latencies[name])) for name in steps)
        for name, summary in (("api", measured), ("webhook", hooked)):
            summary["cpu_ms"] = cpu[name] * 1000 / max(1, summary["runs"])
            summary["machine_cpu_ms"] = machine[name] * 1000 / max(1, summary["runs"])
        return floor, measured, hooked

    def serving(self) -> list[psutil.Process]:
        """The web server's processes that serve requests: gunicorn's workers (its master only
        watches them)."""
        master = psutil.Process(self.children[-1].pid)
        return master.children() or [master]

    # -- through gunicorn -----------------------------------------------------------------------

    def start_web(self, processes: int) -> int:
        port = _free_port()
        # --preload: the app is imported once, before the web processes fork, as in production.
        child = self.spawn("-m", "gunicorn", "keeperstate.wsgi", "-b", f"127.0.0.1:{port}", "-w", str(processes),
                           "--threads", str(self.threads), "--preload", "--log-level", "warning")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                if child.poll() is not None:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.2)
                continue
            # Every web process answers a few requests before anything is measured.
            _threads([functools.partial(_warm, port, self.token) for _ in range(processes * 4)])
            return port
        raise RuntimeError("gunicorn did not listen within 60 s")

    def stack(self, port: int) -> dict[str, float]:
        """What the HTTP stack costs on its own: one client asking a kept-alive connection for an
        unknown API path (gunicorn, Django's middleware and URL resolution, a JSON 404; no
        database). A run cannot take less than this plus its statements."""
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        latencies: list[float] = []

        def ask() -> None:
            started = time.perf_counter()
            conn.request("GET", "/api/no-such-endpoint/")
            response = conn.getresponse()
            response.read()
            if response.status != 404:
                raise RuntimeError(f"the unknown path answered {response.status}")
            latencies.append(time.perf_counter() - started)

        try:
            ask()
            latencies.clear()
            # at least 50 asks: in a short run on a busy machine, two or three would be one hiccup
            _done, elapsed = _for_seconds(ask, self.seconds / 3, at_least=50)
        finally:
            conn.close()
        return _summary(latencies, elapsed)

    def http(self, port: int, kind: str, clients: int) -> dict[str, float]:
        return _summary(*self.clients(port, self.workflows(kind, clients), self.seconds))

    def clients(
        self, port: int, workflows: list[Workflow], seconds: float, via: str = "api"
    ) -> tuple[list[float], float]:
        """One client per workflow for ``seconds``: every request's latency, and the time taken.
        ``via`` is ``api`` (POST execute, 201), ``webhook`` (POST /hooks/…/?wait=10, 200) or
        ``queued`` (POST /hooks/…/, 202: a worker runs it)."""
        latencies: list[float] = []
        lock = threading.Lock()
        stop_at = time.monotonic() + seconds
        barrier = threading.Barrier(len(workflows))

        def client(workflow: Workflow) -> None:
            # Each run reports a new block, across calls too, so the monitor's State Set runs.
            block = self.blocks.setdefault(workflow.id, itertools.count(2))
            # One connection per client, kept alive between requests, as an integration's HTTP
            # session keeps it (gunicorn's gthread workers, which production runs, keep it open).
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            barrier.wait()
            mine = []
            try:
                while time.monotonic() < stop_at:
                    started = time.perf_counter()
                    if via == "api":
                        status = _post(conn, f"/api/workflows/{workflow.id}/execute/",
                                       {"input": {"block": next(block)}}, self.token)
                    else:
                        query = "?wait=10" if via == "webhook" else ""
                        status = _hook(conn, f"/hooks/{workflow.id}/{query}", {"block": next(block)},
                                       workflow.webhook_secret)
                    if status != EXPECTED[via]:
                        raise RuntimeError(f"{via} answered {status}")
                    mine.append(time.perf_counter() - started)
            finally:
                conn.close()
            with lock:
                latencies.extend(mine)

        began = time.monotonic()
        _threads([functools.partial(client, w) for w in workflows])
        return latencies, time.monotonic() - began

    # -- through the queue ------------------------------------------------------------------------

    def queued_webhooks(self, port: int, kind: str, clients: int, workers: int) -> dict[str, dict[str, float]]:
        """Webhooks answered 202 by ``clients`` clients and run by ``workers`` workers, two ways:

        - ``together``: the webhooks are posted for ``self.seconds`` while the workers run them,
          the web process and the workers sharing the machine's cores: the runs per second from
          the first queued to the last finished. It cannot exceed the web's own 202s per second,
          so it says how fast one web process takes webhooks in as much as how the workers keep up.
        - ``drained``: the workers are held (SIGSTOP) while the webhooks are posted, then released
          (SIGCONT): the runs per second from the release to the last run's end, each run's wait
          from the release to its end, and the workers' CPU per run. What two workers do with
          queued webhooks, which the target compares with the API at one client; with the 202s
          per second, their p50 and the web process's CPU per 202 while the workers were held
          (``intake_per_s``, ``intake_p50_ms``, ``intake_cpu_ms``).

        Each gives the CPU per run of the workers (``cpu_ms``) and of the whole machine
        (``machine_cpu_ms``)."""
        web = self.serving()  # before the workers are spawned: serving() reads the last child started
        spawned = [self.spawn(str(settings.BASE_DIR / "manage.py"), "worker", "--no-scheduler") for _ in range(workers)]
        held = False
        try:
            self.warm(kind, workers)
            processes = [psutil.Process(worker.pid) for worker in spawned]
            hooked = self.workflows(kind, clients)
            ran = self._queued_runs(processes, hooked, lambda: self.clients(port, hooked, self.seconds, via="queued"))
            first, last = min(start for start, _ in ran.spans), max(end for _, end in ran.spans)
            together = _summary([(end - start).total_seconds() for start, end in ran.spans],
                                (last - first).total_seconds())
            together.update(cpu_ms=ran.cpu_ms, machine_cpu_ms=ran.machine_cpu_ms)
            # Held for less than half the time after which a silent worker counts as stalled, so
            # nothing takes its jobs away meanwhile (the bench's workers run no recovery anyway).
            hold = min(self.seconds, settings.KEEPERSTATE_WORKER_STALLED_SECONDS / 2)
            for process in processes:
                process.suspend()
            held = True
            hooked = self.workflows(kind, clients)
            web_before = _cpu_seconds(web)
            posted = self.clients(port, hooked, hold, via="queued")
            web_used = _cpu_seconds(web) - web_before
            runs = WorkflowExecution.objects.filter(workflow__in=hooked)
            if runs.exclude(status=WorkflowExecution.Status.QUEUED).exists():
                raise RuntimeError("a worker ran a webhook while held: the drain would not be measured")
            released = timezone.now()
            ran = self._queued_runs(processes, hooked, lambda: [process.resume() for process in processes])
            held = False
            drained = _summary([(end - released).total_seconds() for _, end in ran.spans],
                               (max(end for _, end in ran.spans) - released).total_seconds())
            intake = _summary(*posted)
            drained.update(cpu_ms=ran.cpu_ms, machine_cpu_ms=ran.machine_cpu_ms, intake_per_s=intake["runs_per_s"],
                           intake_p50_ms=intake["p50_ms"], intake_cpu_ms=web_used * 1000 / max(1, intake["runs"]))
        finally:
            for worker in spawned:
                if held:  # a stopped process would not act on SIGTERM: let it go first
                    with contextlib.suppress(psutil.Error):
                        psutil.Process(worker.pid).resume()
                _stop(worker)
                self.children.remove(worker)
        return {"together": together, "drained": drained}

    def _queued_runs(self, processes: list[psutil.Process], workflows: list[Workflow],
                     start: Callable[[], object]) -> _Ran:
        """Call ``start``, which queues runs of ``workflows`` or lets the workers take them, and wait
        for every run of them to finish: their (queued, finished) times, and the CPU per run of the
        workers and of the machine from before ``start``."""
        before, machine_before = _cpu_seconds(processes), _machine_cpu_seconds()
        start()
        runs = WorkflowExecution.objects.filter(workflow__in=workflows)
        deadline = time.monotonic() + 300
        while runs.filter(finished_at__isnull=True).exists():
            if time.monotonic() > deadline:
                raise RuntimeError("queued runs did not finish within 300 s")
            time.sleep(0.2)
        used, machine = _cpu_seconds(processes) - before, _machine_cpu_seconds() - machine_before
        spans = list(runs.values_list("queued_at", "finished_at"))
        if not spans:
            raise RuntimeError("no run was queued")
        return _Ran(spans=spans, cpu_ms=used * 1000 / len(spans), machine_cpu_ms=machine * 1000 / len(spans))

    def queue(self, kind: str, count: int) -> dict[str, float]:
        """A burst of ``self.burst`` runs queued in one transaction, drained by ``count`` workers:
        the runs per second from its commit to the last run's end, each run's wait from the commit
        to its end, and the workers' CPU per run."""
        workers = [self.spawn(str(settings.BASE_DIR / "manage.py"), "worker", "--no-scheduler") for _ in range(count)]
        released: list[datetime] = []  # the burst's commit

        def burst() -> None:
            with transaction.atomic():  # the whole burst waits at once: the workers drain a backlog
                for n in range(self.burst):
                    queue_run(workflows[n % 16], {"block": 10 + n}, trigger="api")
            released.append(timezone.now())  # each run's queuedAt is its insert's, before the commit

        try:
            self.warm(kind, count)
            workflows = self.workflows(kind, 16)
            ran = self._queued_runs([psutil.Process(worker.pid) for worker in workers], workflows, burst)
        finally:
            for worker in workers:
                _stop(worker)
                self.children.remove(worker)
        waits = [(end - released[0]).total_seconds() for _, end in ran.spans]
        summary = _summary(waits, max(waits))
        summary["cpu_ms"] = ran.cpu_ms
        return summary

    def warm(self, kind: str, workers: int) -> None:
        """Let new workers start listening and run a few jobs each before they are measured: a
        worker's first jobs pay for its threads' connections and first imports (about a second
        of CPU each, measured), which a short measurement would count as the queue's."""
        time.sleep(3)
        workflows = self.workflows(kind, 4)
        ids = [queue_run(workflows[n % 4], {"block": 1 + n}, trigger="api").execution.pk for n in range(8 * workers)]
        deadline = time.monotonic() + 120
        while WorkflowExecution.objects.filter(pk__in=ids, finished_at__isnull=True).exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the workers did not run their warm-up jobs within 120 s")
            time.sleep(0.1)

    def spawn(self, *args: str) -> subprocess.Popen[bytes]:
        # A benchmark is not a client to protect the service from: lift the per-token API rate, the
        # webhook's rate per sending address and the organization's runs per minute
        # (keeperstate.ratelimits) for the processes it measures.
        env = child_environment(DATABASE_URL=self.url, DJANGO_DEBUG="false", KEEPERSTATE_API_RATE="100000000/min",
                                KEEPERSTATE_WEBHOOK_RATE="100000000/min", KEEPERSTATE_ORG_RUNS_PER_MINUTE="100000000")
        child = subprocess.Popen([sys.executable, *args], env=env, cwd=settings.BASE_DIR,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.children.append(child)
        return child


def _post(conn: http.client.HTTPConnection, path: str, body: dict[str, Any], token: str) -> int:
    headers = {"Content-Type": "application/json", "Authorization": f"Token {token}"}
    conn.request("POST", path, json.dumps(body), headers)
    response = conn.getresponse()
    response.read()
    return response.status


def _hook(conn: http.client.HTTPConnection, path: str, body: dict[str, Any], secret: str) -> int:
    headers = {"Content-Type": "application/json", "X-KeeperState-Secret": secret}
    conn.request("POST", path, json.dumps(body), headers)
    response = conn.getresponse()
    response.read()
    return response.status


def _warm(port: int, token: str) -> None:
    for _ in range(3):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request("GET", "/api/actions/", headers={"Authorization": f"Token {token}"})
            conn.getresponse().read()
        finally:
            conn.close()


def _for_seconds(step: Callable[[], None], seconds: float, at_least: int = 0) -> tuple[int, float]:
    done, began = 0, time.monotonic()
    while time.monotonic() - began < seconds or done < at_least:
        step()
        done += 1
    return done, time.monotonic() - began


def _threads(targets: list[Callable[[], None]]) -> None:
    errors: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as exc:  # re-raised below, in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    if errors:
        raise errors[0]


def _summary(latencies: list[float], elapsed: float) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "runs": len(ordered),
        "runs_per_s": len(ordered) / elapsed if elapsed > 0 else 0.0,
        "p50_ms": statistics.median(ordered) * 1000 if ordered else 0.0,
        "p95_ms": ordered[int(0.95 * (len(ordered) - 1))] * 1000 if ordered else 0.0,
    }


def _cpu_seconds(processes: list[psutil.Process]) -> float:
    """User and system CPU time the processes have used so far, threads included."""
    total = 0.0
    for process in processes:
        times = process.cpu_times()
        total += times.user + times.system
    return total


def _machine_cpu_seconds() -> float:
    """CPU time the whole machine has spent so far, every core and process: the clients, the web
    and worker processes and Postgres alike (and anything else running, on a shared machine)."""
    times = psutil.cpu_times()
    return times.user + times.system + getattr(times, "nice", 0.0) + getattr(times, "irq", 0.0) + getattr(
        times, "softirq", 0.0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=10)

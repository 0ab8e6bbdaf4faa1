"""Many hosts: two web hosts, two worker hosts, a client host and the database host, each its own
network namespace (tests/hosts/network.py). What one machine's tests cannot show: increments
through both web hosts are exact, a web host cut off mid-load loses no acknowledged run while the
other keeps serving, schedule ticks run once across workers on different hosts, and a worker
host cut off from the database has its run closed within the recovery bound, never run twice.

Each test prints what it measured (`pytest tests/hosts -s`)."""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
from collections import Counter
from http.server import ThreadingHTTPServer

import pytest
from django.core.management import call_command
from django.utils import timezone

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import queue_run
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.services import workflow_create
from tests.egress.server import Handler
from tests.executions.graphs import counter_graph, trigger
from tests.hosts.network import inside
from tests.workers.processes import wait_until

pytestmark = [pytest.mark.hosts, pytest.mark.processes, pytest.mark.django_db(transaction=True)]

PORT = 8000
RECOVERY_BOUND_SECONDS = 15


@pytest.fixture
def token(user):
    import io

    out = io.StringIO()
    call_command("create_api_token", user.get_username(), stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def counted(workflow) -> int:
    row = WorkflowState.objects.filter(workflow=workflow, key="runs").first()
    return row.value if row else 0


def listening(network, host) -> bool:
    answered: list[bool] = []

    def ask() -> None:
        # The whole thread in the client's namespace: every socket it opens (and http.client's
        # reconnects) stays inside the namespaces the test made.
        with inside(network.hosts["client"].netns):
            conn = http.client.HTTPConnection(host.address, PORT, timeout=2)
            try:
                conn.request("GET", "/healthz")
                answered.append(conn.getresponse().status == 200)
            except OSError:
                answered.append(False)
            finally:
                conn.close()

    thread = threading.Thread(target=ask)
    thread.start()
    thread.join(timeout=10)
    return bool(answered and answered[0])


class Clients:
    """Careful clients on the client host: each intended run has an Idempotency-Key; after a
    timeout or a refused connection the client retries it, on the next web host."""

    def __init__(self, network, hosts, token, workflow):
        self.network, self.hosts, self.token, self.workflow = network, hosts, token, workflow
        self.lock = threading.Lock()
        self.acknowledged: dict[str, str] = {}  # key → web host that answered 201/200
        self.answered_after: Counter[str] = Counter()  # web host → answers after `mark`
        self.mark: float | None = None
        self.failures = 0
        self.statuses: Counter[int] = Counter()

    def run(self, clients: int, seconds: float) -> float:
        stop_at = time.monotonic() + seconds
        threads = [threading.Thread(target=self._client, args=(n, stop_at)) for n in range(clients)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=seconds + 60)
        assert not any(t.is_alive() for t in threads)
        return time.monotonic() - began

    def _connect(self, host):
        return http.client.HTTPConnection(host.address, PORT, timeout=3)

    def _client(self, n: int, stop_at: float) -> None:
        # The whole thread in the client's namespace: every socket it opens (and http.client's
        # reconnects) stays inside the namespaces the test made.
        with inside(self.network.hosts["client"].netns):
            self._requests(n, stop_at)

    def _requests(self, n: int, stop_at: float) -> None:
        turn = n % len(self.hosts)
        conn = self._connect(self.hosts[turn])
        while time.monotonic() < stop_at:
            key = str(uuid.uuid4())
            for _attempt in range(2 * len(self.hosts) + 2):
                host = self.hosts[turn]
                try:
                    conn.request("POST", f"/api/workflows/{self.workflow.id}/execute/", json.dumps({"input": {}}),
                                 {"Authorization": f"Token {self.token}", "Content-Type": "application/json",
                                  "Idempotency-Key": key})
                    response = conn.getresponse()
                    body = response.read()
                except (OSError, http.client.HTTPException):
                    conn.close()
                    with self.lock:
                        self.failures += 1
                    turn = (turn + 1) % len(self.hosts)  # that host is gone: the next one
                    conn = self._connect(self.hosts[turn])
                    continue
                with self.lock:
                    self.statuses[response.status] += 1
                if response.status == 200 and json.loads(body)["status"] != "success":
                    break  # a retry found its run still going on the host that was cut: not acknowledged
                if response.status in (200, 201):
                    with self.lock:
                        self.acknowledged[key] = host.name
                        if self.mark is not None and time.monotonic() > self.mark:
                            self.answered_after[host.name] += 1
                    break
                time.sleep(0.2)
        conn.close()


def test_increments_through_two_web_hosts_are_exact_and_runs_per_s_at_16_clients(network, on_hosts, org, user,
                                                                                  token):
    web1, web2 = network.hosts["web1"], network.hosts["web2"]
    on_hosts.web(web1)
    on_hosts.web(web2)
    wait_until(lambda: listening(network, web1) and listening(network, web2), 60, "both web hosts")
    nodes, edges = counter_graph("Manual")
    one = workflow_create(organization=org, user=user, name="One web host", nodes=nodes, edges=edges)
    both = workflow_create(organization=org, user=user, name="Two web hosts", nodes=nodes, edges=edges)

    single = Clients(network, [web1], token, one)
    single_time = single.run(16, 4)
    double = Clients(network, [web1, web2], token, both)
    double_time = double.run(16, 4)

    assert single.acknowledged, single.statuses
    assert double.acknowledged, double.statuses
    rates = (len(single.acknowledged) / single_time, len(double.acknowledged) / double_time)
    print(f"\n[hosts] runs/s at 16 clients: one web host {rates[0]:.1f}, two web hosts {rates[1]:.1f} "
          f"(x{rates[1] / rates[0]:.2f}); through both: {Counter(double.acknowledged.values())}")
    for clients, workflow in ((single, one), (double, both)):
        successes = WorkflowExecution.objects.filter(workflow=workflow, status="success").count()
        assert clients.failures == 0
        assert counted(workflow) == successes == len(clients.acknowledged)
    assert set(double.acknowledged.values()) == {"web1", "web2"}


def test_a_web_host_cut_off_mid_load_loses_no_acknowledged_run_and_the_other_keeps_serving(
    network, on_hosts, org, user, token
):
    web1, web2 = network.hosts["web1"], network.hosts["web2"]
    on_hosts.web(web1)
    on_hosts.web(web2)
    on_hosts.worker(network.hosts["worker2"])  # its recovery closes what web1 left running
    wait_until(lambda: listening(network, web1) and listening(network, web2), 60, "both web hosts")
    nodes, edges = counter_graph("Manual")
    workflow = workflow_create(organization=org, user=user, name="Cut web host", nodes=nodes, edges=edges)
    clients = Clients(network, [web1, web2], token, workflow)

    def cut() -> None:
        web1.cut()
        clients.mark = time.monotonic()
        time.sleep(3)
        network.forwarder.drop(web1.address)  # the database finds web1's sessions dead

    timer = threading.Timer(2.0, cut)
    timer.start()
    try:
        clients.run(16, 8)
    finally:
        timer.cancel()

    # A run web1 had started when its link went: its increment rolled back with its session, and
    # the worker's recovery closes it as interrupted.
    wait_until(lambda: not WorkflowExecution.objects.filter(workflow=workflow, status="running").exists(), 30,
               "web1's last runs to be closed")
    by_key = dict(WorkflowExecution.objects.filter(workflow=workflow).values_list("idempotency_key", "status"))
    lost = [k for k in clients.acknowledged if by_key.get(k) != "success"]
    successes = sum(1 for s in by_key.values() if s == "success")
    print(f"\n[hosts] web1 cut at 2 s: acknowledged {len(clients.acknowledged)}, lost {len(lost)}, "
          f"answers after the cut {dict(clients.answered_after)}, client timeouts/refusals {clients.failures}")
    assert lost == []
    assert clients.answered_after["web2"] > 0, "the other web host kept serving"
    assert counted(workflow) == successes, "an increment without its success record, or a run counted twice"
    assert len(by_key) == WorkflowExecution.objects.filter(workflow=workflow).count(), "a key ran twice"


def test_schedule_ticks_run_exactly_once_across_workers_on_two_hosts(network, on_hosts, org, user, settings):
    settings.KEEPERSTATE_MIN_INTERVAL = 1
    on_hosts.worker(network.hosts["worker1"])
    on_hosts.worker(network.hosts["worker2"])
    nodes, edges = counter_graph("Schedule", interval=1, overlap="allow")
    workflow = workflow_create(organization=org, user=user, name="Ticks", nodes=nodes, edges=edges, active=True)

    time.sleep(8)
    workflow.active = False
    workflow.save(update_fields=["active"])
    wait_until(lambda: not WorkflowExecution.objects.filter(workflow=workflow, status__in=["queued", "running"])
               .exists(), 20, "the last ticks to finish")

    ticks = list(WorkflowExecution.objects.filter(workflow=workflow).values_list("scheduled_for", flat=True))
    successes = WorkflowExecution.objects.filter(workflow=workflow, status="success").count()
    print(f"\n[hosts] ticks in 8 s on two worker hosts: {len(ticks)} executions, {len(set(ticks))} distinct ticks, "
          f"{successes} succeeded, counter {counted(workflow)}")
    assert len(ticks) == len(set(ticks)) >= 3
    assert counted(workflow) == successes == len(ticks)


def test_a_worker_host_cut_off_from_the_database_has_its_run_closed_in_time_and_never_run_twice(
    network, on_hosts, org, user, settings
):
    settings.KEEPERSTATE_MIN_INTERVAL = 1
    client = network.hosts["client"]
    with inside(client.netns):
        slow = ThreadingHTTPServer((client.address, 0), Handler)
    slow.hits = []  # type: ignore[attr-defined]
    slow.daemon_threads = True
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    allow = {"KEEPERSTATE_HTTP_ALLOW": f"{client.address}:{slow.server_address[1]}",
             "KEEPERSTATE_RUN_HEARTBEAT_SECONDS": "2", "KEEPERSTATE_RUN_STALE_SECONDS": "10",
             "KEEPERSTATE_RECOVERY_SECONDS": "2", "KEEPERSTATE_WORKER_STALLED_SECONDS": "10"}
    try:
        worker1 = network.hosts["worker1"]
        on_hosts.worker(worker1, **allow)
        nodes = [trigger("Manual"),
                 {"id": "fetch", "type": "action", "position": {"x": 0, "y": 120},
                  "data": {"label": "Fetch", "type": "action", "config": {
                      "actionType": "HTTP Request", "url": f"http://{client.address}:{slow.server_address[1]}/slow?s=20"}}}]
        edges = [{"id": "e1", "source": "trigger", "target": "fetch"}]
        workflow = workflow_create(organization=org, user=user, name="Cut worker", nodes=nodes, edges=edges)
        queue_run(workflow, {}, trigger="api")  # queued: worker1, alone, takes it
        held = wait_until(lambda: WorkflowExecution.objects.filter(workflow=workflow, status="running").first(), 30,
                          "worker1 to start the run")
        on_hosts.worker(network.hosts["worker2"], **allow)
        time.sleep(2)

        worker1.cut()
        cut_at = time.monotonic()
        threading.Timer(3, network.forwarder.drop, args=(worker1.address,)).start()  # its sessions found dead
        wait_until(lambda: WorkflowExecution.objects.filter(pk=held.pk, status="interrupted").exists(),
                   RECOVERY_BOUND_SECONDS + 15, "the cut worker's run to be closed", interval=0.1)
        closed = time.monotonic() - cut_at
        time.sleep(12)  # the job of the silent worker is handed back meanwhile: it must not run again

        runs = WorkflowExecution.objects.filter(workflow=workflow).count()
        fetched = [h for h in slow.hits if h.startswith("GET /slow")]  # type: ignore[attr-defined]
        print(f"\n[hosts] worker1 cut from the database mid-run: closed interrupted after {closed:.1f} s "
              f"(bound {RECOVERY_BOUND_SECONDS} s); runs {runs}; the slow server was called {len(fetched)} time(s)")
        assert closed < RECOVERY_BOUND_SECONDS
        assert runs == 1
        assert len(fetched) == 1, "the run was started again"
        assert timezone.now()  # the test database is still answering here
    finally:
        slow.shutdown()
        slow.server_close()

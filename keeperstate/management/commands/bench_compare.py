"""Before and after, on this machine at the same time: this checkout's API against another's.

Each checkout serves from its own gunicorn (one web process of 4 threads, ``--preload``, as
bench_runs starts it), on its own database (each checkout's embedded Postgres, in its own data
folder; or both on DATABASE_URL when it is set), with an organization, a token and the two
workflows of bench_runs (the counter and the block monitor) made in it by its own code. One client
then takes turns between the two in blocks of ``--block`` requests, ``--rounds`` times, each
checkout first in turn: a counter run, a monitor run and the HTTP stack alone (a 404) through the
API with the token, and a webhook of the counter answered 202 (``queued``: the run is queued, no
worker runs it; each side's queued runs and their jobs are deleted at the end). A drift of the
machine (another session's load, the disk's flush time) reaches both sides alike, where two runs
of bench_runs minutes apart meet different machines.

It prints, per kind and side: p50 and p95 latency, runs/s at one client, and the CPU time of the
serving process per request (user + system of gunicorn's worker over that side's turns); the
ratios after ÷ before; and the load average as the rounds went. Figures only: no target, no exit
status (ADR 0071).

``--db-latency MS`` (with DATABASE_URL) puts a network between the service and Postgres, as
where the database is another machine: both sides reach it through a proxy in this process that
holds each chunk ``MS / 2`` milliseconds in each direction, so every round trip takes ``MS``
more. (This machine's kernel has no netem, which would delay the packets themselves.)

``--before-database NAME`` (with DATABASE_URL) gives the other checkout its own database on the
same server, through the same proxy: a checkout from before a migration that changed the schema
cannot run on the newer one (migrate each first: ``DATABASE_URL=…/NAME manage.py migrate`` in it).
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import socket
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from keeperstate.ops.env import child_environment, env_str

KINDS = ("counter", "monitor", "stack", "queued")
# Run by each checkout's own code (`manage.py shell`), so each side makes its rows its own way.
SETUP = """
import io, json, uuid, copy
from django.core.management import call_command
from django.contrib.auth import get_user_model
from keeperstate.accounts.models import Membership, Organization
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.examples import block_monitor_graph
from keeperstate.management.commands.bench_runs import COUNTER_NODES, COUNTER_EDGES
suffix = uuid.uuid4().hex[:8]
org = Organization.objects.create(name="bench compare", slug=f"bench-compare-{suffix}")
user = get_user_model().objects.create_user(username=f"bench-compare-{suffix}")
Membership.objects.create(user=user, organization=org, role=Membership.Role.OWNER)
out = io.StringIO()
call_command("create_api_token", user.get_username(), stdout=out)
nodes, edges = block_monitor_graph()
made = {
    "token": out.getvalue().strip().splitlines()[-1],
    "counter": str(Workflow.objects.create(organization=org, name="counter", nodes=copy.deepcopy(COUNTER_NODES),
                                           edges=COUNTER_EDGES, active=True).id),
    "monitor": str(Workflow.objects.create(organization=org, name="monitor", nodes=copy.deepcopy(nodes),
                                           edges=edges, active=True).id),
    "organization": str(org.pk),
}
hooked = copy.deepcopy(COUNTER_NODES)
hooked[0]["data"]["config"]["triggerType"] = "Webhook"
hook = Workflow.objects.create(organization=org, name="queued", nodes=hooked, edges=COUNTER_EDGES, active=True)
made["queued"], made["secret"] = str(hook.id), hook.webhook_secret
print("BENCH_COMPARE " + json.dumps(made))
"""
# The webhook's queued runs and their jobs, which no worker ran (ORGANIZATION is set before it).
CLEANUP = """
from django.db import connection
from keeperstate.executions.models import WorkflowExecution
WorkflowExecution.objects.filter(organization_id=ORGANIZATION, status="queued").delete()
with connection.cursor() as cursor:
    cursor.execute("DELETE FROM procrastinate_jobs WHERE args->>'organization_id' = %s", [str(ORGANIZATION)])
"""


class Command(BaseCommand):
    help = "Compare this checkout's API runs with another checkout's, taking turns on this machine."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("before", help="the other checkout (its manage.py and .venv), measured as 'before'")
        parser.add_argument("--rounds", type=int, default=20, help="turns of each kind on each side")
        parser.add_argument("--block", type=int, default=25, help="requests per turn")
        parser.add_argument("--db-latency", type=float, default=0.0, metavar="MS",
                            help="milliseconds added to each round trip to Postgres (needs DATABASE_URL)")
        parser.add_argument("--before-database", metavar="NAME",
                            help="the other checkout's database on the same server (needs DATABASE_URL)")

    def handle(self, *args: Any, **options: Any) -> None:
        before = Path(options["before"]).resolve()
        if not (before / "manage.py").exists() or not (before / ".venv" / "bin" / "python").exists():
            raise CommandError(f"{before} is not a checkout with a manage.py and a .venv to run it with.")
        sides = {"before": before, "after": Path(settings.BASE_DIR).resolve()}
        latency = options["db_latency"]
        url = env_str("DATABASE_URL")
        if latency and not url:
            raise CommandError("--db-latency puts a proxy before a Postgres server: set DATABASE_URL to one.")
        if options["before_database"] and not url:
            raise CommandError("--before-database names a database on DATABASE_URL's server: set DATABASE_URL.")
        proxy = DelayingProxy(url, latency / 1000) if latency and url else None
        overrides = {"DATABASE_URL": proxy.url} if proxy else {}
        side_urls = {}
        if options["before_database"]:
            side_urls["before"] = _with_database(proxy.url if proxy else str(url), options["before_database"])
        if proxy and url:
            direct, through = _round_trip_ms(url), _round_trip_ms(proxy.url)
            self.stdout.write(f"a round trip to Postgres (SELECT 1): {through:.2f} ms through the proxy, "
                              f"{direct:.2f} ms direct")
        compare = Compare(sides, rounds=options["rounds"], block=options["block"], out=self.stdout,
                          side_urls=side_urls, **overrides)
        try:
            figures = compare.run()
        finally:
            compare.stop()
            if proxy:
                proxy.stop()
        figures["db_latency_ms"] = latency
        if proxy and url:
            figures["round_trip_ms"] = {"direct": direct, "through_proxy": through}
        self.stdout.write(json.dumps(figures, sort_keys=True))


def _with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead of its own."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + quote(name, safe="")))


def _round_trip_ms(url: str, count: int = 200) -> float:
    """The median time of a ``SELECT 1`` on one connection to ``url``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT 1")
        times = []
        for _ in range(count):
            started = time.perf_counter()
            conn.execute("SELECT 1")
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


class DelayingProxy:
    """A TCP proxy to the Postgres server of ``url``, holding what it forwards ``round_trip / 2``
    seconds in each direction (order kept, no limit on throughput), so each round trip through it
    takes ``round_trip`` more. Threads, not an event loop: an event loop's timers wait whole
    milliseconds, a thread's sleep a few microseconds. ``url`` is the address to give clients."""

    def __init__(self, url: str, round_trip: float):
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(url)
        host, port = str(info.get("host") or "127.0.0.1"), int(info.get("port") or 5432)
        # A folder is a Unix socket's (the embedded server's), as libpq reads it.
        self.target: tuple[int, Any] = ((socket.AF_UNIX, f"{host}/.s.PGSQL.{port}") if host.startswith("/")
                                        else (socket.AF_INET, (host, port)))
        self.delay = round_trip / 2
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()
        credentials = quote(str(info.get("user") or ""), safe="")
        if info.get("password"):
            credentials += ":" + quote(str(info["password"]), safe="")
        at = f"{credentials}@" if credentials else ""
        name = quote(str(info.get("dbname") or ""), safe="")
        self.url = f"postgresql://{at}127.0.0.1:{self.listener.getsockname()[1]}/{name}"

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue  # closed by stop()
            family, address = self.target
            server = socket.socket(family, socket.SOCK_STREAM)
            try:
                server.connect(address)
            except OSError:
                server.close()
                client.close()
                continue
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if family == socket.AF_INET:
                server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._forward(client, server)
            self._forward(server, client)

    def _forward(self, source: socket.socket, sink: socket.socket) -> None:
        held: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

        def read() -> None:
            try:
                while data := source.recv(65536):
                    held.put((time.monotonic() + self.delay, data))
            except OSError:
                pass
            held.put((0.0, b""))

        def deliver() -> None:
            while True:
                due, data = held.get()
                if not data:
                    break
                time.sleep(max(0.0, due - time.monotonic()))
                try:
                    sink.sendall(data)
                except OSError:
                    break
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        threading.Thread(target=read, daemon=True).start()
        threading.Thread(target=deliver, daemon=True).start()

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()


class Compare:
    def __init__(self, sides: dict[str, Path], *, rounds: int, block: int, out: Any,
                 side_urls: dict[str, str] | None = None, **env: str):
        self.sides, self.rounds, self.block, self.out = sides, rounds, block, out
        self.side_urls = side_urls or {}  # a side's own DATABASE_URL (--before-database)
        self.servers: dict[str, subprocess.Popen[bytes]] = {}
        self.made: dict[str, dict[str, str]] = {}  # each side's organization, token and workflows
        # Each side on its own checkout's data folder (unless DATABASE_URL puts both on one server).
        self.env = child_environment(without=["KEEPERSTATE_DATA_DIR"], DJANGO_DEBUG="false",
                                     KEEPERSTATE_API_RATE="100000000/min", KEEPERSTATE_WEBHOOK_RATE="100000000/min",
                                     KEEPERSTATE_ORG_RUNS_PER_MINUTE="100000000", **env)
        self.blocks = iter(range(100_000, 10**9))  # the monitor's cursor: a new block, the same size

    def env_of(self, tree: Path) -> dict[str, str]:
        name = next(side for side, path in self.sides.items() if path == tree)
        return {**self.env, "DATABASE_URL": self.side_urls[name]} if name in self.side_urls else self.env

    def run(self) -> dict[str, Any]:
        made = self.made = {name: self.setup(tree) for name, tree in self.sides.items()}
        ports = {name: self.serve(name, tree) for name, tree in self.sides.items()}
        conns = {name: http.client.HTTPConnection("127.0.0.1", port, timeout=60) for name, port in ports.items()}
        workers = {name: _serving(self.servers[name]) for name in self.sides}
        latencies: dict[tuple[str, str], list[float]] = {(n, k): [] for n in self.sides for k in KINDS}
        cpu = dict.fromkeys(latencies, 0.0)
        for name in self.sides:  # warm: connections, prepared statements, the keys exist
            for kind in KINDS:
                for _ in range(50):
                    self.request(conns, name, made[name], kind)
        loads = []
        for round_ in range(self.rounds):
            loads.append(os.getloadavg()[0])
            order = list(self.sides) if round_ % 2 == 0 else list(reversed(self.sides))
            for kind in KINDS:
                for name in order:
                    self.request(conns, name, made[name], kind)  # untimed: reopens a connection gunicorn closed
                    used = _cpu_seconds(workers[name])
                    for _ in range(self.block):
                        started = time.perf_counter()
                        self.request(conns, name, made[name], kind)
                        latencies[(name, kind)].append(time.perf_counter() - started)
                    cpu[(name, kind)] += _cpu_seconds(workers[name]) - used
        for conn in conns.values():
            conn.close()
        figures: dict[str, Any] = {"load": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)},
                                   "rounds": self.rounds, "block": self.block}
        self.out.write(f"{self.rounds} rounds of {self.block} requests per kind and side; load average (1 min) "
                       f"{min(loads):.1f}–{max(loads):.1f}, median {statistics.median(loads):.1f}")
        self.out.write(f"{'':<26}{'p50 ms':>9}{'p95 ms':>9}{'runs/s':>9}{'cpu ms':>9}")
        for kind in KINDS:
            for name in self.sides:
                ordered = sorted(latencies[(name, kind)])
                summary = {
                    "p50_ms": statistics.median(ordered) * 1000,
                    "p95_ms": ordered[int(0.95 * (len(ordered) - 1))] * 1000,
                    "runs_per_s": len(ordered) / sum(ordered),
                    "cpu_ms": cpu[(name, kind)] * 1000 / len(ordered),
                }
                figures[f"{kind}.{name}"] = summary
                self.out.write(f"{kind + ', ' + name:<26}{summary['p50_ms']:>9.2f}{summary['p95_ms']:>9.2f}"
                               f"{summary['runs_per_s']:>9.1f}{summary['cpu_ms']:>9.2f}")
            after, before = figures[f"{kind}.after"], figures[f"{kind}.before"]
            # (CPU time is counted in clock ticks: a short run may see none on one side)
            ratios = {key: after[key] / before[key] if before[key] else None for key in after}
            figures[f"{kind}.after_vs_before"] = ratios
            shown = "".join(f"{ratio:>9.2f}" if ratio is not None else f"{'-':>9}" for ratio in ratios.values())
            self.out.write(f"{kind + ', after ÷ before':<26}{shown}")
        return figures

    def setup(self, tree: Path) -> dict[str, str]:
        done = subprocess.run([str(tree / ".venv" / "bin" / "python"), "manage.py", "shell"], cwd=tree,
                              env=self.env_of(tree), input=SETUP, capture_output=True, text=True, timeout=300)
        lines = [line for line in done.stdout.splitlines() if line.startswith("BENCH_COMPARE ")]
        if done.returncode != 0 or not lines:
            raise CommandError(f"{tree} could not make its workflows: {done.stderr.strip()[-500:]}")
        made: dict[str, str] = json.loads(lines[-1].split(" ", 1)[1])
        return made

    def serve(self, name: str, tree: Path) -> int:
        port = _free_port()
        self.servers[name] = subprocess.Popen(
            [str(tree / ".venv" / "bin" / "python"), "-m", "gunicorn", "keeperstate.wsgi", "-b", f"127.0.0.1:{port}",
             "-w", "1", "--threads", "4", "--preload", "--log-level", "warning"],
            cwd=tree, env=self.env_of(tree), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                if self.servers[name].poll() is not None:
                    raise CommandError(f"gunicorn of {tree} did not start") from None
                time.sleep(0.2)
        raise CommandError(f"gunicorn of {tree} did not listen within 60 s")

    def request(self, conns: dict[str, http.client.HTTPConnection], name: str, made: dict[str, str],
                kind: str) -> None:
        conn = conns[name]
        try:
            status = self.send(conn, made, kind)
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            conn.close()  # gunicorn closed a connection left idle through the other side's turn
            status = self.send(conn, made, kind)
        expected = {"stack": 404, "queued": 202}.get(kind, 201)
        if status != expected:
            raise CommandError(f"the {name} side answered {status} to a {kind} request, not {expected}")

    def send(self, conn: http.client.HTTPConnection, made: dict[str, str], kind: str) -> int:
        if kind == "stack":
            conn.request("GET", "/api/no-such-endpoint/")
        elif kind == "queued":
            conn.request("POST", f"/hooks/{made['queued']}/", json.dumps({"block": next(self.blocks)}),
                         {"Content-Type": "application/json", "X-KeeperState-Secret": made["secret"]})
        else:
            body = json.dumps({"input": {"block": next(self.blocks)}})
            conn.request("POST", f"/api/workflows/{made[kind]}/execute/", body,
                         {"Content-Type": "application/json", "Authorization": f"Token {made['token']}"})
        response = conn.getresponse()
        response.read()
        return response.status

    def stop(self) -> None:
        for name, made in self.made.items():
            tree = self.sides[name]
            subprocess.run([str(tree / ".venv" / "bin" / "python"), "manage.py", "shell"], cwd=tree,
                           env=self.env_of(tree), input=f"ORGANIZATION = {int(made['organization'])}\n{CLEANUP}",
                           capture_output=True, text=True, timeout=300)
        for server in self.servers.values():
            if server.poll() is None:
                server.send_signal(signal.SIGTERM)
                try:
                    server.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait(timeout=10)


def _serving(master: subprocess.Popen[bytes]) -> list[psutil.Process]:
    process = psutil.Process(master.pid)
    return process.children() or [process]


def _cpu_seconds(processes: list[psutil.Process]) -> float:
    return sum(p.cpu_times().user + p.cpu_times().system for p in processes)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


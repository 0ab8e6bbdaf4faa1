"""The hosts tier: web processes, workers, Postgres and clients on different (namespaced) hosts.

Needs root and iproute2 (`ip netns`); skipped otherwise. Every namespace is deleted after the
module, even on failure, and every process is stopped by PID with bounded waits.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import pytest
from django.conf import settings

from tests.hosts.network import Forwarder, Host, Network
from tests.workers.processes import FAST, child_database_url

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")
DB_PORT = 5432


def pytest_collection_modifyitems(items):
    if os.geteuid() != 0 or shutil.which("ip") is None:
        for item in items:
            item.add_marker(pytest.mark.skip(reason="the hosts tier needs root and iproute2 (ip netns)"))


@pytest.fixture(scope="module")
def network():
    """Hosts db, web1, web2, worker1, worker2 and client on one switch; the db host forwards
    its port 5432 to the test database."""
    net = Network()
    try:
        net.start()
        for name in ("db", "web1", "web2", "worker1", "worker2", "client"):
            net.host(name)
        yield net
    finally:
        net.delete()


@pytest.fixture
def database_host(network):
    """The test database as the other hosts see it: postgresql://…@<db host>:5432/…"""
    db = network.hosts["db"]
    parts = urlsplit(child_database_url())  # where the test database really is (the embedded one's address)
    where = unquote(parts.netloc.rsplit("@", 1)[-1].rsplit(":", 1)[0]) or "127.0.0.1"
    forwarder = Forwarder(db, DB_PORT, (where, parts.port or 5432))
    auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    url = urlunsplit(parts._replace(netloc=f"{auth}{db.address}:{DB_PORT}"))
    network.forwarder = forwarder
    yield url
    forwarder.close()


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass  # the group is gone already


class HostProcesses:
    def __init__(self, log_dir: Path, database_url: str):
        self.log_dir, self.database_url = log_dir, database_url
        self.children: list[subprocess.Popen[bytes]] = []
        self.hosts: dict[int, Host] = {}  # by pid

    def start(self, host: Host, name: str, *args: str, **env: str) -> subprocess.Popen[bytes]:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        full_env = {**os.environ, **FAST, "DATABASE_URL": self.database_url, "PYTHONUNBUFFERED": "1",
                    "KEEPERSTATE_API_RATE": "100000000/min", "KEEPERSTATE_ORG_RUNS_PER_MINUTE": "100000000", **env}
        # A session of its own: its process group (the process's pid) holds gunicorn's workers too.
        process = subprocess.Popen(host.command(sys.executable, *args), stdout=log, stderr=subprocess.STDOUT,
                                   env=full_env, cwd=settings.BASE_DIR, start_new_session=True)
        process.log_path = log.name  # type: ignore[attr-defined]
        self.children.append(process)
        self.hosts[process.pid] = host
        return process

    def web(self, host: Host, port: int = 8000) -> subprocess.Popen[bytes]:
        return self.start(host, f"web-{host.name}", "-m", "gunicorn", "keeperstate.wsgi", "-b",
                          f"{host.address}:{port}", "-w", "1", "--threads", "4", "--log-level", "warning",
                          DJANGO_ALLOWED_HOSTS=host.address)

    def worker(self, host: Host, *args: str, **env: str) -> subprocess.Popen[bytes]:
        return self.start(host, f"worker-{host.name}", MANAGE, "worker", *args, **env)

    def stop_all(self) -> None:
        for process in self.children:
            if process.poll() is None:
                # A host that was cut off is gone, as a vanished machine is: its processes could
                # only wait out TCP timeouts on their way out (20 s of every such test's teardown).
                _signal_group(process, signal.SIGKILL if self.hosts[process.pid].is_cut else signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.children:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout=10)
            # A gunicorn worker whose master was killed (a host cut off mid-request) would outlive
            # it: whatever is left of the group goes too.
            _signal_group(process, signal.SIGKILL)

    def logs(self) -> str:
        return "\n".join(f"--- {Path(p.log_path).name} ---\n{Path(p.log_path).read_text(errors='replace')[-2000:]}"  # type: ignore[attr-defined]
                         for p in self.children)


@pytest.fixture
def on_hosts(database_host, tmp_path, request):
    running = HostProcesses(tmp_path, database_host)
    try:
        yield running
    finally:
        running.stop_all()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(running.logs())

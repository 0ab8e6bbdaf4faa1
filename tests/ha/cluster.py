"""A Patroni cluster on loopback for the HA tier: one etcd and three Postgres 15 nodes under
Patroni, each process started and stopped by its PID with bounded waits, every folder removed.

The configuration is docs/production.md's ("Running on Patroni"): etcd's v3 API, synchronous
replication (an acknowledged commit is on two nodes), ``pg_rewind`` for a node that comes back,
``ttl`` 10 s. Patroni and Postgres run as the ``postgres`` user; Patroni finds Postgres's binaries
in ``bin_dir`` and runs ``initdb`` and ``postgres`` itself.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.ops.serving import free_port

BIN_DIR = "/usr/lib/postgresql/15/bin"
SCOPE = "keeperstate-ha"
NODES = ("node1", "node2", "node3")
START_SECONDS = 120  # etcd and three nodes from empty folders: 10–15 s on an idle machine of 2 cores
STOP_SECONDS = 20
# What each test of the tier measured, one line each: printed again at the end of the run
# (tests/ha/conftest.py), where CI shows it, since a test's own output is not shown when it passes.
FIGURES: list[str] = []

# The dynamic configuration the cluster starts with (docs/production.md, "Running on Patroni").
DCS = {
    "ttl": 10,
    "loop_wait": 2,
    "retry_timeout": 4,  # loop_wait + 2 × retry_timeout ≤ ttl
    "maximum_lag_on_failover": 1048576,
    "synchronous_mode": True,
    "synchronous_mode_strict": False,
    "postgresql": {
        "use_pg_rewind": True,
        "use_slots": True,
        "parameters": {"wal_log_hints": "on", "max_connections": 100, "max_wal_senders": 10,
                       "max_replication_slots": 10, "wal_keep_size": "128MB"},
    },
}


def missing() -> str | None:
    """What the tier needs and this machine lacks, in one sentence; None when nothing is."""
    needs = {"patroni": shutil.which("patroni"), "patronictl": shutil.which("patronictl"),
             "etcd": shutil.which("etcd"), "postgres": (Path(BIN_DIR) / "postgres").exists() or None,
             "pg_rewind": (Path(BIN_DIR) / "pg_rewind").exists() or None}
    lacking = [name for name, found in needs.items() if not found]
    if lacking:
        return (f"the HA tier needs {', '.join(lacking)}: apt-get install -y patroni etcd-server postgresql-15 "
                "(.ci/run and the README's test command install them)")
    return None


@dataclass
class Node:
    name: str
    port: int
    api_port: int
    folder: Path
    patroni: subprocess.Popen[bytes] | None = None

    @property
    def config(self) -> Path:
        return self.folder / "patroni.yml"

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "patroni.log"

    def postmaster_pid(self) -> int | None:
        """The postmaster's PID: line 1 of postmaster.pid (the postmaster is not Patroni's child)."""
        try:
            return int((self.data_dir / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    def api(self, path: str, method: str = "GET", timeout: float = 2) -> tuple[int, Any]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.api_port}{path}", method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, _json(response.read())
        except urllib.error.HTTPError as error:
            return error.code, _json(error.read())
        except (OSError, urllib.error.URLError):
            return 0, None


@dataclass
class Cluster:
    folder: Path
    etcd_port: int = field(default_factory=free_port)
    etcd_peer_port: int = field(default_factory=free_port)
    nodes: list[Node] = field(default_factory=list)
    etcd: subprocess.Popen[bytes] | None = None

    @classmethod
    def create(cls) -> Cluster:
        folder = Path(tempfile.mkdtemp(prefix="keeperstate-ha-"))
        folder.chmod(0o755)
        cluster = cls(folder)
        cluster.nodes = [Node(name, free_port(), free_port(), folder / name) for name in NODES]
        return cluster

    # --- the connection string the service uses -----------------------------------------------

    @property
    def database_url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)
        return f"postgresql://postgres@{hosts}/keeperstate?target_session_attrs=read-write"

    def connect_url(self, node: Node, database: str = "keeperstate") -> str:
        return f"postgresql://postgres@127.0.0.1:{node.port}/{database}"

    # --- start and stop -----------------------------------------------------------------------

    def start(self) -> None:
        self.start_etcd()
        for node in self.nodes:
            self.write_config(node)
            self.start_node(node)
        self.wait_for(lambda: self.leader() and len(self.replicas()) == 2 and self.sync_standby(),
                      START_SECONDS, "a leader, a synchronous standby and a replica")

    def start_etcd(self) -> None:
        data = self.folder / "etcd"
        log = open(self.folder / "etcd.log", "wb")  # noqa: SIM115 - closed with the process
        client, peer = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{self.etcd_peer_port}"
        self.etcd = subprocess.Popen(
            ["etcd", "--name", "ha", "--data-dir", str(data), "--listen-client-urls", client,
             "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"ha={peer}", "--initial-cluster-state", "new"],
            stdout=log, stderr=subprocess.STDOUT,
        )
        self.wait_for(self.etcd_healthy, 30, "etcd to answer")

    def etcd_healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.etcd_port}/health", timeout=1) as response:
                return _json(response.read()).get("health") == "true"
        except (OSError, ValueError, AttributeError):
            return False

    def write_config(self, node: Node) -> None:
        node.folder.mkdir(parents=True, exist_ok=True)
        _own(node.folder)
        lines = {
            "scope": SCOPE,
            "name": node.name,
            "restapi": {"listen": f"127.0.0.1:{node.api_port}", "connect_address": f"127.0.0.1:{node.api_port}"},
            # etcd 3.4 serves its v3 API only: "etcd3", on every node and for patronictl
            "etcd3": {"hosts": f"127.0.0.1:{self.etcd_port}"},
            "bootstrap": {
                "dcs": DCS,
                "initdb": [{"encoding": "UTF8"}],
                "pg_hba": ["local all all trust", "host all all 127.0.0.1/32 trust",
                           "host replication all 127.0.0.1/32 trust"],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{node.port}",
                "connect_address": f"127.0.0.1:{node.port}",
                "data_dir": str(node.data_dir),
                "bin_dir": BIN_DIR,
                "pgpass": str(node.folder / "pgpass"),
                "authentication": {"superuser": {"username": "postgres"},
                                   "replication": {"username": "replicator", "password": "replicator"},
                                   "rewind": {"username": "rewinder", "password": "rewinder"}},
                # a private socket folder: the machine's own server uses the default one
                "parameters": {"unix_socket_directories": str(node.folder)},
            },
            "watchdog": {"mode": "off"},
            "log": {"level": "INFO"},
        }
        node.config.write_text(json.dumps(lines, indent=2))  # JSON is YAML
        _own(node.config)

    def start_node(self, node: Node) -> None:
        log = open(node.log, "ab")  # noqa: SIM115 - closed with the process
        node.patroni = subprocess.Popen(
            ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "patroni", str(node.config)],
            stdout=log, stderr=subprocess.STDOUT, cwd=node.folder,
            env={**os.environ, "HOME": str(node.folder)},
        )

    def start_stopped(self) -> None:
        """Start each node whose Patroni is not running (one a failed test left killed), so a
        test begins on a cluster of three whatever the one before it did."""
        for node in self.nodes:
            if node.patroni is not None and node.patroni.poll() is not None:
                self.start_node(node)

    def kill(self, node: Node) -> float:
        """kill -9 of the node's postmaster and its Patroni, as a machine that dies; the moment."""
        postmaster = node.postmaster_pid()
        moment = time.monotonic()
        if node.patroni is not None:
            node.patroni.send_signal(signal.SIGKILL)
        if postmaster:
            _signal(postmaster, signal.SIGKILL)
        if node.patroni is not None:
            node.patroni.wait(timeout=STOP_SECONDS)
        return moment

    def stop(self) -> None:
        """Everything down by PID (Patroni first, then each postmaster, then etcd) and the folder gone."""
        for node in self.nodes:
            postmaster = node.postmaster_pid()
            if node.patroni is not None and node.patroni.poll() is None:
                node.patroni.send_signal(signal.SIGKILL)
                node.patroni.wait(timeout=STOP_SECONDS)
            if postmaster:
                _signal(postmaster, signal.SIGQUIT)  # Postgres's immediate shutdown
                _wait_gone(postmaster, STOP_SECONDS)
        if self.etcd is not None and self.etcd.poll() is None:
            self.etcd.terminate()
            try:
                self.etcd.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.etcd.kill()
                self.etcd.wait(timeout=STOP_SECONDS)
        shutil.rmtree(self.folder, ignore_errors=True)

    # --- what the cluster says ------------------------------------------------------------------

    def members(self) -> list[dict[str, Any]]:
        for node in self.nodes:
            status, body = node.api("/cluster")
            if status == 200 and body:
                return body.get("members", [])
        return []

    def leader(self) -> Node | None:
        for node in self.nodes:
            if node.api("/primary")[0] == 200:
                return node
        return None

    def replicas(self) -> list[Node]:
        return [node for node in self.nodes if node.api("/replica")[0] == 200]

    def sync_standby(self) -> Node | None:
        names = {m["name"] for m in self.members()
                 if m.get("role") == "sync_standby" and m.get("state") in ("running", "streaming")}
        return next((node for node in self.nodes if node.name in names), None)

    def role_of(self, node: Node) -> str | None:
        return next((m.get("role") for m in self.members() if m["name"] == node.name), None)

    def patronictl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["patronictl", "-c", str(self.nodes[0].config), *args], capture_output=True, text=True,
                              timeout=60)

    @staticmethod
    def wait_for(condition: Callable[[], Any], seconds: float, what: str, interval: float = 0.2) -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if result := condition():
                return result
            time.sleep(interval)
        raise AssertionError(f"timed out after {seconds} s waiting for {what}")

    def logs(self) -> str:
        parts = []
        for path in [self.folder / "etcd.log", *(node.log for node in self.nodes)]:
            if path.exists():
                parts.append(f"--- {path.name} ({path.parent.name}) ---\n{path.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return None


def _own(path: Path) -> None:
    user = pwd.getpwnam("postgres")
    os.chown(path, user.pw_uid, user.pw_gid)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _wait_gone(pid: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    _signal(pid, signal.SIGKILL)

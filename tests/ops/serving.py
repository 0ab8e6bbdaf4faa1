"""Run `manage.py serve` (and other commands) as real processes against a private data folder.

Each helper process gets its own KEEPERSTATE_DATA_DIR, so its embedded Postgres is not the one
the test database lives on. Everything is stopped by pid with bounded waits.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def command_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DJANGO_DEBUG"}}
    env["KEEPERSTATE_DATA_DIR"] = str(data_dir)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def pid_list(data_dir: Path) -> list[int]:
    path = data_dir / "postgres" / ".handle_pids.json"
    return json.loads(path.read_text()) if path.exists() else []


def postmaster_pid(data_dir: Path) -> int | None:
    path = data_dir / "postgres" / "postmaster.pid"
    try:
        return int(path.read_text().splitlines()[0])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid: int) -> bool:
    if pid <= 0:  # postmaster.pid of a standalone backend (initdb)
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


class Managed:
    """A `manage.py` process whose output is collected line by line in the background."""

    def __init__(self, *args: str, data_dir: Path, **env: str):
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=command_env(data_dir, **env),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line.rstrip("\n"))

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return "\n".join(self.out) + "\n--- stderr ---\n" + "\n".join(self.err)

    def wait_for_line(self, text: str, timeout: float, stream: str = "out") -> str:
        lines = self.out if stream == "out" else self.err
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(lines):
                if text in line:
                    return line
            if self.process.poll() is not None and not any(r.is_alive() for r in self._readers):
                break
            time.sleep(0.1)
        raise AssertionError(f"no line with {text!r} within {timeout:.0f} s:\n{self.output()}")

    def descendants(self) -> list[int]:
        try:
            return [p.pid for p in psutil.Process(self.pid).children(recursive=True)]
        except psutil.Error:
            return []

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40) -> int:
        """Send ``sig`` and wait; SIGKILL (the whole tree) if it does not exit in time."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_tree()
            raise AssertionError(f"pid {self.pid} did not exit within {timeout} s:\n{self.output()}") from None
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def kill_tree(self) -> None:
        for pid in [*self.descendants(), self.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=10)


def stop_embedded_postgres(data_dir: Path) -> None:
    """Last resort after a failed test: stop the folder's server so it does not outlive the run."""
    pid = postmaster_pid(data_dir)
    if pid is not None and alive(pid):
        os.kill(pid, signal.SIGQUIT)  # immediate shutdown
        wait_until(lambda: not alive(pid), 20, "the embedded Postgres to stop")


def migrated_data_dir(path: Path) -> Path:
    """A data folder at ``path`` whose embedded Postgres is initialised and migrated, and stopped.
    initdb and the migrations cost ~20 s, so tests prepare one per module and start from it."""
    failures = []
    for attempt in range(2):  # initdb can fail for a moment when the machine is short of memory
        folder = path / f"attempt-{attempt}"
        migrate = Managed("migrate", "--verbosity", "0", data_dir=folder)
        if migrate.stop(sig=0, timeout=240) == 0:
            stop_embedded_postgres(folder)
            return folder
        failures.append(migrate.output())
        stop_embedded_postgres(folder)
    raise AssertionError("could not prepare a data folder:\n" + "\n".join(failures))


def copy_data_dir(template: Path, target: Path) -> Path:
    """A private copy of a stopped, migrated data folder (no pid files: nobody uses the copy).
    ``cp -a`` keeps the owner: the embedded Postgres runs as its own user."""
    subprocess.run(["cp", "-a", str(template), str(target)], check=True, timeout=120)
    for name in ("postmaster.pid", ".handle_pids.json"):
        (target / "postgres" / name).unlink(missing_ok=True)
    return target


# These processes always run on an embedded server of their own (DATABASE_URL is removed from
# their environment), so CI's second run, on the Postgres server, would only repeat them.
own_embedded_server = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="uses its own embedded Postgres; the embedded run covers it"
)

"""Real worker and web processes for tests, on the test database, stopped by PID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from keeperstate.ops.database import database_url
from tests.ops.serving import free_port  # noqa: F401 - one helper for every test that needs a port

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")

# Fast clocks for tests: poll, heartbeat and give up on the dead within seconds, not minutes.
FAST = {
    "KEEPERSTATE_MIN_INTERVAL": "1",
    "KEEPERSTATE_SCHEDULER_POLL_SECONDS": "0.2",
    "KEEPERSTATE_HOUSEKEEPING_SECONDS": "0.5",
    "KEEPERSTATE_RUN_HEARTBEAT_SECONDS": "0.5",
    "KEEPERSTATE_RUN_STALE_SECONDS": "3",
    "KEEPERSTATE_WORKER_HEARTBEAT_SECONDS": "0.5",
    "KEEPERSTATE_WORKER_STALLED_SECONDS": "2",
}


def child_database_url() -> str:
    """The test database as a DATABASE_URL, so children never start (or join) the embedded server."""
    return database_url(connection.settings_dict)


def child_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **FAST, "DATABASE_URL": child_database_url(), "PYTHONUNBUFFERED": "1"}
    env.update(extra)
    return env


class Processes:
    """Children of one test; ``stop_all`` ends them (SIGTERM, a bounded wait, then SIGKILL)."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.children: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, *args: str, **env: str) -> subprocess.Popen[bytes]:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            [sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, env=child_env(**env),
            cwd=settings.BASE_DIR,
        )
        process.log_path = log.name  # type: ignore[attr-defined]
        self.children.append(process)
        return process

    def worker(self, name: str, *args: str, **env: str) -> subprocess.Popen[bytes]:
        process = self.start(name, MANAGE, "worker", *args, **env)
        wait_until(lambda: b"worker" in Path(process.log_path).read_bytes(), 30, f"{name} to start")  # type: ignore[attr-defined]
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def stop(self, process: subprocess.Popen[bytes], timeout: float = 20) -> int | None:
        return stop_process(process, timeout)

    def stop_all(self) -> None:
        for process in self.children:
            self.stop(process)

    def logs(self) -> str:
        return "\n".join(
            f"--- {Path(p.log_path).name} ---\n{Path(p.log_path).read_text(errors='replace')[-3000:]}"  # type: ignore[attr-defined]
            for p in self.children
        )


def wait_until(condition: Callable[[], Any], seconds: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


@pytest.fixture
def processes(tmp_path, request):
    """Real processes for one test (``Processes``), all stopped by PID afterwards; their logs are
    printed when the test failed. Used by the conftests of tests/workers and tests/chain."""
    running = Processes(tmp_path)
    try:
        yield running
    finally:
        running.stop_all()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(running.logs())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps the call's report on the item (``rep_call``), so a fixture's teardown knows whether
    the test failed."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report


def stop_process(process: subprocess.Popen[bytes], timeout: float = 20) -> int | None:
    """By PID: SIGTERM, a bounded wait, then SIGKILL; its exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    return process.returncode

"""The embedded Postgres' list of users (.handle_pids.json): the last live user stops the server,
whatever happened to the others."""

from __future__ import annotations

import os
import signal
import time

import httpx
import psutil
import pytest

from tests.ops.serving import (
    Managed,
    alive,
    free_port,
    own_embedded_server,
    pid_list,
    postmaster_pid,
    wait_until,
)

pytestmark = own_embedded_server

CONNECT = "from django.db import connection; connection.ensure_connection(); print('connected', flush=True)"


def test_a_killed_user_does_not_keep_the_embedded_server_running(data_dir):
    killed = Managed("shell", "-c", CONNECT + "; import time; time.sleep(120)", data_dir=data_dir)
    killed.wait_for_line("connected", 120)
    server = postmaster_pid(data_dir)
    os.kill(killed.pid, signal.SIGKILL)
    # Not reaped yet: a zombie still has its pid, and must count as gone.
    wait_until(lambda: psutil.Process(killed.pid).status() == psutil.STATUS_ZOMBIE, 10, "a zombie")
    assert killed.pid in pid_list(data_dir)

    last = Managed("shell", "-c", CONNECT, data_dir=data_dir)
    assert last.stop(sig=0, timeout=120) == 0, last.output()

    killed.process.wait(timeout=10)
    assert pid_list(data_dir) == []
    wait_until(lambda: not alive(server), 30, "the embedded Postgres to stop")


def test_runserver_leaves_and_stops_the_embedded_server_on_sigterm(data_dir):
    port = free_port()
    # With the autoreloader: SIGTERM reaches the reloading parent, which takes its child along.
    runserver = Managed("runserver", str(port), data_dir=data_dir)
    wait_until(lambda: _answers(port), 120, f"runserver on port {port}")
    server = postmaster_pid(data_dir)
    # The serving child alone: the reloader never opens a connection. On SIGTERM it kills that
    # child (SIGKILL, no atexit), and on its own way out drops it from the list and stops the server.
    users = pid_list(data_dir)
    assert len(users) == 1
    assert users[0] in runserver.descendants()

    assert runserver.stop(signal.SIGTERM, timeout=30) == 0, runserver.output()

    wait_until(lambda: pid_list(data_dir) == [], 10, "the list of users to empty")
    wait_until(lambda: not alive(server), 30, "the embedded Postgres to stop")


def _answers(port: int) -> bool:
    try:
        httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=2)
    except httpx.HTTPError:
        return False
    return True


@pytest.mark.parametrize("when", ["starting", "running"])
def test_the_worker_leaves_and_stops_the_embedded_server_on_sigterm(data_dir, when):
    worker = Managed("worker", data_dir=data_dir)
    worker.wait_for_line("scheduler, housekeeping", 60)
    # It joins the embedded server with its first connection, which it opens after that line.
    wait_until(lambda: pid_list(data_dir) == [worker.pid], 60, "the worker to join the embedded server")
    if when == "running":  # Procrastinate's own handler has taken over: it stops gracefully
        time.sleep(3)
    server = postmaster_pid(data_dir)
    assert pid_list(data_dir) == [worker.pid]

    assert worker.stop(signal.SIGTERM, timeout=40) == 0, worker.output()

    assert pid_list(data_dir) == []
    wait_until(lambda: not alive(server), 30, "the embedded Postgres to stop")

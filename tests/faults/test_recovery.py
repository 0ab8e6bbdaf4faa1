"""How fast the service recovers, measured on the real thing (`manage.py serve`: gunicorn, a
worker, Postgres): the worker hears new jobs again soon after Postgres restarts.

Each test prints what it measured (`pytest -s` shows it), for docs/reliability.md.
"""

from __future__ import annotations

import os
import signal
import time

import psycopg
import pytest

from tests.faults.test_faults import Service, call, start_service
from tests.ops.serving import copy_data_dir, own_embedded_server, postmaster_pid, stop_embedded_postgres, wait_until

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

# The worker's fallback poll, made long: a run queued while nobody listens would wait this long,
# so a fast run proves the job's notification reached the worker.
SLOW_POLL = {"KEEPERSTATE_WORKER_POLL_SECONDS": "30"}


def queued_run_latency(service: Service) -> float:
    """Queue one run (the API's ?async=true) and return queued-to-finished, in seconds."""
    path = f"/api/workflows/{service.workflow_id}/execute/?async=true"
    status, body = call(service.port, service.token, "POST", path, {"input": {}})
    assert status == 202, body

    def finished():
        with psycopg.connect(service.conninfo, connect_timeout=5) as db:
            row = db.execute("SELECT finished_at - queued_at FROM workflow_execution WHERE id = %s AND "
                             "finished_at IS NOT NULL", [body["id"]]).fetchone()
        return row

    return wait_until_value(finished, 40).total_seconds()


def wait_until_value(fetch, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if (row := fetch()) is not None:
                return row[0]
        except psycopg.OperationalError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"the queued run did not finish within {seconds} s")


@pytest.fixture
def slow_poll_service(migrated, tmp_path):
    service = start_service(copy_data_dir(migrated, tmp_path / "data"), own_server=True, **SLOW_POLL)
    yield service
    try:
        service.serve.stop(timeout=60)
    finally:
        stop_embedded_postgres(service.data_dir)


@own_embedded_server
def test_the_worker_hears_new_jobs_again_within_5_s_of_a_postgres_restart(slow_poll_service):
    service = slow_poll_service
    before = queued_run_latency(service)

    os.kill(postmaster_pid(service.data_dir), signal.SIGKILL)
    service.serve.wait_for_line("restarted it", 60, stream="err")
    restarted = time.monotonic()
    wait_until(lambda: _answers(service), 30, "the service to answer again")
    time.sleep(max(0.0, restarted + 5 - time.monotonic()))
    after = [queued_run_latency(service) for _ in range(3)]

    print(f"\n[postgres restart] queued run latency before {before * 1000:.0f} ms; 5 s after the restart "
          f"{', '.join(f'{a * 1000:.0f}' for a in after)} ms (the worker's fallback poll: 30 s)")
    assert before < 5
    assert max(after) < 5, "the worker did not hear the job: it waited for its poll"


def _answers(service: Service) -> bool:
    try:
        return call(service.port, service.token, "GET", "/api/actions/")[0] == 200
    except OSError:
        return False

"""Worker tests start real `manage.py worker` (and gunicorn) processes on the test database."""

from __future__ import annotations

import pytest

from tests.workers.processes import Processes


@pytest.fixture
def processes(tmp_path, request):
    running = Processes(tmp_path)
    yield running
    running.stop_all()
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        print(running.logs())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report


@pytest.fixture
def fast_schedules(settings):
    settings.KEEPERSTATE_MIN_INTERVAL = 1

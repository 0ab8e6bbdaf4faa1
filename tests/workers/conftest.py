"""Worker tests start real `manage.py worker` (and gunicorn) processes on the test database."""

from __future__ import annotations

import pytest


@pytest.fixture
def fast_schedules(settings):
    settings.KEEPERSTATE_MIN_INTERVAL = 1

"""Fixtures of the HTTP Request tests: a real local server, allowed only where a test says so."""

from __future__ import annotations

import pytest

from tests.egress.server import LocalServer


@pytest.fixture
def server():
    started = LocalServer().start()
    yield started
    started.stop()


@pytest.fixture
def allow_server(settings, server):
    """The local server's address is allowed (as host:port only); every other private address is not."""
    settings.KEEPERSTATE_HTTP_ALLOW = [f"127.0.0.1:{server.port}"]
    return server


@pytest.fixture
def allow_nothing(settings):
    settings.KEEPERSTATE_HTTP_ALLOW = []

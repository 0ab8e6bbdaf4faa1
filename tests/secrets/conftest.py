"""The secrets tests use the HTTP Request tests' local server."""

from tests.egress.conftest import allow_nothing, allow_server, server  # noqa: F401

"""No answer names its server software (issue 20 item 7): gunicorn, as `serve` and production
start it (docs/production.md), sends no ``Server: gunicorn`` header."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from keeperstate.management.commands.serve import Command

GUNICORN_CONFIG = "python:keeperstate.ops.gunicorn_conf"


def app(environ, start_response):
    """A WSGI app with no database: the header is gunicorn's, whatever the app answers."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_starts_gunicorn_with_the_config():
    with socket.socket() as listener:
        argv = Command()._children(listener, 1)[0].argv

    assert argv[argv.index("--config") + 1] == GUNICORN_CONFIG


@pytest.mark.processes
def test_gunicorn_with_the_config_sends_no_server_header(tmp_path):
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--config", GUNICORN_CONFIG, "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--threads", "2", "tests.security.test_server_header:app"],
        cwd=os.getcwd(), stdout=subprocess.DEVNULL, stderr=(tmp_path / "gunicorn.log").open("wb"),
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            try:
                connection.request("GET", "/")
                response = connection.getresponse()
                response.read()
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "gunicorn.log").read_text()
                time.sleep(0.2)
            finally:
                connection.close()

        assert response.status == 200
        assert response.getheader("Server") is None
        assert response.getheader("Date") is not None  # the other default headers stay
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=5)

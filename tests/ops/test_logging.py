"""Logging is what settings.LOGGING declares, in every process, whatever a library does on import."""

from __future__ import annotations

from tests.ops.test_env import run_python

SCRIPT = """
import logging
import django
django.setup()
import keeperstate.urls  # the URLconf builds the MCP server, whose SDK configures logging
logging.getLogger("procrastinate.worker").info("a library's info line")
logging.getLogger("procrastinate.worker").warning("a library's warning")
logging.getLogger("keeperstate.executions").info("our info line")
"""


def test_the_mcp_server_leaves_logging_as_settings_declare_it(tmp_path):
    # when a process sets up Django and imports the URLconf (as gunicorn and the worker do), then
    # logs a library's info line and warning and one of ours
    done = run_python(["-c", SCRIPT], tmp_path, DJANGO_SETTINGS_MODULE="keeperstate.settings")

    # then a library's info lines stay unprinted (a worker printed two per job, which halved its
    # runs per second), its warnings and our own lines are printed once each, in plain text
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["a library's warning", "our info line"]

"""The log line of each HTTP Request names its workflow, node and run; a refused or failed request
(an egress block included) is a warning with its code."""

from __future__ import annotations

import logging

import pytest

from keeperstate.executions.service import run_workflow
from tests.executions.graphs import trigger
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


def fetching(org, user, url):
    nodes = [trigger(), {"id": "fetch", "type": "action", "position": {"x": 0, "y": 120},
                         "data": {"label": "Fetch", "type": "action",
                                  "config": {"actionType": "HTTP Request", "method": "GET", "url": url}}}]
    return make_workflow(org, user=user, nodes=nodes, edges=[{"id": "e1", "source": "trigger", "target": "fetch"}])


def test_a_request_is_logged_with_its_workflow_node_and_run(org, user, allow_server, caplog):
    workflow = fetching(org, user, f"{allow_server.url}/block")
    caplog.set_level(logging.INFO, logger="keeperstate")

    execution = run_workflow(workflow, {})

    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("HTTP Request")]
    assert line.startswith("HTTP Request GET 127.0.0.1 → 200 in ")
    assert line.endswith(f"(workflow {workflow.id} node fetch run {execution.id})")


def test_an_egress_block_is_a_warning_naming_its_run(org, user, allow_nothing, caplog):
    workflow = fetching(org, user, "http://10.0.0.1/metadata")
    caplog.set_level(logging.INFO, logger="keeperstate")

    execution = run_workflow(workflow, {})

    [record] = [r for r in caplog.records if r.getMessage().startswith("HTTP Request")]
    assert record.levelno == logging.WARNING
    assert "HTTP_EGRESS_BLOCKED" in record.getMessage()
    assert f"(workflow {workflow.id} node fetch run {execution.id})" in record.getMessage()

"""The runner: graphs from trigger to State Set, branches, failures (DESIGN.md §4)."""

from __future__ import annotations

import pytest

from keeperstate.demo import block_monitor_graph
from keeperstate.engine.runner import run_workflow
from keeperstate.models import WorkflowState
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def monitor(org, user):
    nodes, edges = block_monitor_graph()
    return make_workflow(org, name="Block monitor", user=user, nodes=nodes, edges=edges)


def test_monitor_first_run_creates_the_cursor(monitor):
    execution = run_workflow(monitor, {"block": 100})

    assert execution.status == "success", execution.error
    assert execution.node_results["state-get-1"] == {
        "success": True, "data": {"exists": False, "value": None, "version": 0, "expiresAt": None},
    }
    assert execution.node_results["condition-1"]["data"] == {"result": True}
    assert execution.node_results["state-set-1"]["data"] == {
        "key": "cursor", "version": 1, "created": True, "expiresAt": None,
    }
    row = WorkflowState.objects.get(workflow=monitor, key="cursor")
    assert (row.value, row.version, row.updated_by_execution_id) == (100, 1, execution.id)


def test_monitor_advances_on_a_new_block_and_skips_a_repeated_one(monitor):
    run_workflow(monitor, {"block": 100})

    repeated = run_workflow(monitor, {"block": 100})
    newer = run_workflow(monitor, {"block": 101})
    older = run_workflow(monitor, {"block": 99})

    assert repeated.node_results["state-set-1"] == {"skipped": True}
    assert newer.node_results["state-set-1"]["data"]["version"] == 2
    assert older.node_results["condition-1"]["data"] == {"result": False}
    row = WorkflowState.objects.get(workflow=monitor, key="cursor")
    assert (row.value, row.version, row.updated_by_execution_id) == (101, 2, newer.id)
    assert all(e.status == "success" for e in (repeated, newer, older))


def test_block_number_stays_a_number(monitor):
    run_workflow(monitor, {"block": 100})
    run_workflow(monitor, {"block": 99})  # compared as numbers, so 99 < 100 (as text "99" > "100")

    assert WorkflowState.objects.get(workflow=monitor, key="cursor").value == 100

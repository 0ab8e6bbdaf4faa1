"""The runner: graphs from trigger to State Set, branches, failures (DESIGN.md §4)."""

from __future__ import annotations

import pytest

from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


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


def graph(*actions, edges=None):
    """A trigger followed by the given (id, label, config) action nodes in a chain."""
    nodes = [{"id": "trigger", "type": "trigger", "data": {"label": "Trigger", "config": {"triggerType": "Manual"}}}]
    chain = ["trigger"]
    for node_id, label, config in actions:
        nodes.append({"id": node_id, "type": "action", "data": {"label": label, "type": "action", "config": config}})
        chain.append(node_id)
    if edges is None:
        pairs = zip(chain, chain[1:], strict=False)
        edges = [{"id": f"e{i}", "source": a, "target": b} for i, (a, b) in enumerate(pairs)]
    return nodes, edges


def test_unresolved_reference_fails_the_node_before_it_writes(org, user):
    config = {"actionType": "State Set", "key": "k", "value": "<<@trigger:Trigger.nope>>"}
    nodes, edges = graph(("set", "State Set", config))
    wf = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(wf, {"block": 1})

    assert execution.status == "error"
    assert execution.node_results["set"]["code"] == "TEMPLATE_UNRESOLVED"
    assert "<<@trigger:Trigger.nope>>" in execution.node_results["set"]["error"]
    assert "Node 'State Set' (set) failed" in execution.error
    assert not WorkflowState.objects.exists()


def test_version_conflict_is_recorded_with_expected_and_current(org, user):
    config = {"actionType": "State Set", "key": "k", "value": "1", "expectedVersion": "5"}
    nodes, edges = graph(("set", "State Set", config))
    wf = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(wf, {})

    result = execution.node_results["set"]
    assert result["code"] == "STATE_VERSION_CONFLICT"
    assert result["details"] == {"expected": 5, "current": 0}
    assert execution.status == "error"


def test_a_failed_node_stops_its_branch_but_not_the_others(org, user):
    nodes, _ = graph(
        ("bad", "Bad", {"actionType": "State Get", "key": ""}),
        ("after", "After", {"actionType": "State Set", "key": "after", "value": "1"}),
        ("other", "Other", {"actionType": "State Set", "key": "other", "value": "2"}),
    )
    edges = [
        {"id": "e1", "source": "trigger", "target": "bad"},
        {"id": "e2", "source": "bad", "target": "after"},
        {"id": "e3", "source": "trigger", "target": "other"},
    ]
    wf = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(wf, {})

    assert execution.node_results["bad"]["code"] == "STATE_INVALID_KEY"
    assert "after" not in execution.node_results
    assert execution.node_results["other"]["success"] is True
    assert list(WorkflowState.objects.values_list("key", flat=True)) == ["other"]
    assert execution.status == "error"


def test_false_branch_runs_and_true_branch_is_skipped(org, user):
    nodes, _ = graph(
        ("cond", "Check", {"actionType": "Condition", "condition": "<<@trigger:Trigger.n>> > 10"}),
        ("yes", "Yes", {"actionType": "State Set", "key": "yes", "value": "1"}),
        ("no", "No", {"actionType": "State Set", "key": "no", "value": "1"}),
        ("after-yes", "After yes", {"actionType": "State Get", "key": "yes"}),
    )
    edges = [
        {"id": "e1", "source": "trigger", "target": "cond"},
        {"id": "e2", "source": "cond", "target": "yes", "sourceHandle": "true"},
        {"id": "e3", "source": "cond", "target": "no", "sourceHandle": "false"},
        {"id": "e4", "source": "yes", "target": "after-yes"},
    ]
    wf = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(wf, {"n": 3})

    assert execution.node_results["yes"] == {"skipped": True}
    assert execution.node_results["after-yes"] == {"skipped": True}
    assert execution.node_results["no"]["success"] is True
    assert execution.status == "success"


def test_a_node_runs_once_all_incoming_edges_delivered(org, user):
    nodes, _ = graph(
        ("a", "A", {"actionType": "State Set", "key": "a", "value": "1"}),
        ("b", "B", {"actionType": "State Set", "key": "b", "value": "2"}),
        ("join", "Join", {"actionType": "State Set", "key": "sum", "value": "<<@a:A.version>>+<<@b:B.version>>"}),
    )
    edges = [
        {"id": "e1", "source": "trigger", "target": "a"},
        {"id": "e2", "source": "trigger", "target": "b"},
        {"id": "e3", "source": "a", "target": "join"},
        {"id": "e4", "source": "b", "target": "join"},
    ]
    wf = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(wf, {})

    assert execution.status == "success", execution.error
    assert WorkflowState.objects.get(key="sum").value == "1+1"


def test_a_cyclic_graph_runs_nothing(org, user):
    nodes, _ = graph(("a", "A", {"actionType": "State Set", "key": "a", "value": "1"}))
    edges = [{"id": "e1", "source": "trigger", "target": "a"}, {"id": "e2", "source": "a", "target": "a"}]
    wf = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(wf, {})

    assert execution.status == "error"
    assert "cycle" in execution.error
    assert execution.node_results == {}
    assert not WorkflowState.objects.exists()


def test_input_must_be_an_object(monitor):
    from keeperstate.engine.runner import RunInputInvalid

    with pytest.raises(RunInputInvalid):
        run_workflow(monitor, [1, 2])


def test_runner_never_retries_a_failed_write(org, user, monkeypatch):
    from keeperstate.engine.actions import state_set as state_set_module

    calls = []
    original = state_set_module.state_set

    def counting(**kwargs):
        calls.append(kwargs["key"])
        return original(**kwargs)

    monkeypatch.setattr(state_set_module, "state_set", counting)
    config = {"actionType": "State Set", "key": "k", "value": "1", "expectedVersion": "9"}
    nodes, edges = graph(("set", "State Set", config))
    wf = make_workflow(org, user=user, nodes=nodes, edges=edges)

    run_workflow(wf, {})

    assert calls == ["k"]


def test_conflict_branch_lets_a_workflow_alert_without_failing(org, user):
    nodes, _ = graph(
        ("set", "Claim", {"actionType": "State Set", "key": "lock", "value": "1", "expectedVersion": "0",
                          "onConflict": "branch"}),
        ("won", "Won", {"actionType": "State Set", "key": "won", "value": "<<@set:Claim.version>>"}),
        ("lost", "Lost", {"actionType": "State Set", "key": "lost", "value": "<<@set:Claim.currentVersion>>"}),
    )
    edges = [
        {"id": "e1", "source": "trigger", "target": "set"},
        {"id": "e2", "source": "set", "target": "won"},  # no handle: the success path
        {"id": "e3", "source": "set", "target": "lost", "sourceHandle": "conflict"},
    ]
    wf = make_workflow(org, user=user, nodes=nodes, edges=edges)

    first = run_workflow(wf, {})
    second = run_workflow(wf, {})

    assert first.node_results["lost"] == {"skipped": True}
    assert first.node_results["won"]["success"] is True
    assert second.status == "success"
    assert second.node_results["set"]["data"]["conflict"] is True
    assert second.node_results["won"] == {"skipped": True}
    assert WorkflowState.objects.get(key="lost").value == 1


def test_a_graph_writes_at_most_once_with_one_writer_and_no_loop():
    from keeperstate.engine.runner import writes_at_most_once
    from keeperstate.workflows.examples import block_monitor_graph

    counter, _ = graph(("count", "State Increment", {"actionType": "State Increment", "key": "runs"}))
    monitor, _ = block_monitor_graph()
    two, _ = graph(("a", "A", {"actionType": "State Set", "key": "a", "value": "1"}),
                   ("b", "B", {"actionType": "State Delete", "key": "b"}))
    looped, _ = graph(("each", "Each", {"actionType": "For Each", "items": "[1, 2]"}),
                      ("set", "Set", {"actionType": "State Set", "key": "a", "value": "1"}))

    assert writes_at_most_once(counter)
    assert writes_at_most_once(monitor)
    assert not writes_at_most_once(two)
    assert not writes_at_most_once(looped)

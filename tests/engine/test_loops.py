"""For Each and Set Fields in runs (DESIGN.md §14): the body once per item, in order, each write
committed as it happens, done afterwards, the iterations recorded, two levels, the run's bound."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError

from keeperstate.engine import runner
from keeperstate.engine.validation import validate_graph
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.services import workflow_create

pytestmark = pytest.mark.django_db

LOOP = "<<@loop:Each.item>>"
INDEX = "<<@loop:Each.index>>"


def action(node_id: str, label: str, config: dict[str, Any]) -> dict[str, Any]:
    return {"id": node_id, "type": "action", "data": {"label": label, "type": "action", "config": config}}


def trigger(sample: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": "trigger", "type": "trigger",
            "data": {"label": "Trigger", "type": "trigger",
                     "config": {"triggerType": "Manual", "sampleInput": sample or {"from": 1, "to": 3}}}}


def edge(source: str, target: str, handle: str | None = None) -> dict[str, Any]:
    found = {"id": f"{source}-{target}", "source": source, "target": target}
    if handle:
        found["sourceHandle"] = handle
    return found


def loop_graph(items: str = "range(<<@trigger:Trigger.from>>, <<@trigger:Trigger.to>>)", max_items: int | None = None,
               body: list[dict[str, Any]] | None = None, after: list[dict[str, Any]] | None = None):
    """Trigger → For Each —each→ Count (State Increment seen) → Last (State Set last = item);
    —done→ Summary (State Set summary = the loop's count)."""
    config: dict[str, Any] = {"actionType": "For Each", "items": items}
    if max_items is not None:
        config["maxItems"] = max_items
    body = body if body is not None else [
        action("count", "Count", {"actionType": "State Increment", "key": "seen"}),
        action("last", "Last", {"actionType": "State Set", "key": "last", "value": LOOP}),
    ]
    after = after if after is not None else [
        action("summary", "Summary", {"actionType": "State Set", "key": "summary", "value": "<<@loop:Each.count>>"}),
    ]
    nodes = [trigger(), action("loop", "Each", config), *body, *after]
    edges = [edge("trigger", "loop")]
    previous = "loop"
    for index, node in enumerate(body):
        edges.append(edge(previous, node["id"], "each" if index == 0 else None))
        previous = node["id"]
    for node in after:
        edges.append(edge("loop", node["id"], "done"))
    return nodes, edges


def state(workflow) -> dict[str, Any]:
    return dict(WorkflowState.objects.filter(workflow=workflow).values_list("key", "value"))


@pytest.fixture
def looped(org, user):
    def make(**kwargs):
        nodes, edges = loop_graph(**kwargs)
        return workflow_create(organization=org, user=user, name="Loop", nodes=nodes, edges=edges)
    return make


def test_the_body_runs_once_per_item_in_order_then_done(looped):
    workflow = looped()

    execution = run_workflow(workflow, {"from": 5, "to": 8})

    assert execution.status == "success", execution.error
    assert state(workflow) == {"seen": 4, "last": 8, "summary": 4}
    results = execution.node_results
    assert results["loop"] == {"success": True,
                               "data": {"count": 4, "truncated": False, "remaining": 0, "stopped": False}}
    assert [r["data"]["version"] for r in results["last"]["iterations"]] == [1, 2, 3, 4]
    assert results["last"]["iterationCount"] == 4
    assert results["last"]["data"]["version"] == 4  # a body node reads as its last iteration after the loop


def test_an_empty_list_runs_no_item_and_goes_on_to_done(looped):
    workflow = looped()

    execution = run_workflow(workflow, {"from": 3, "to": 2})  # range(3, 2) is empty

    assert execution.status == "success"
    assert state(workflow) == {"summary": 0}
    assert "last" not in execution.node_results


def test_max_items_runs_the_first_ones_and_counts_the_rest(looped):
    workflow = looped(max_items=2)

    execution = run_workflow(workflow, {"from": 1, "to": 5})

    assert execution.node_results["loop"]["data"] == {"count": 2, "truncated": True, "remaining": 3, "stopped": False}
    assert state(workflow) == {"seen": 2, "last": 2, "summary": 2}


def test_only_the_first_100_iterations_are_recorded_in_full(looped):
    workflow = looped(max_items=150)

    execution = run_workflow(workflow, {"from": 1, "to": 150})

    last = execution.node_results["last"]
    assert (len(last["iterations"]), last["iterationCount"]) == (100, 150)
    assert state(workflow)["last"] == 150


def test_a_failing_body_node_stops_the_loop_at_its_item(looped):
    # given: the third item's value is null, which state cannot hold
    workflow = looped(items="[1, 2, null, 4]")

    execution = run_workflow(workflow, {})

    assert execution.status == "error"
    assert execution.error_code == "STATE_INVALID_VALUE"  # the first node that failed
    loop = execution.node_results["loop"]
    assert (loop["code"], loop["details"]["index"]) == ("LOOP_ITEM_FAILED", 2)
    assert state(workflow) == {"seen": 3, "last": 2}  # items 0 and 1 committed; done did not run
    assert "summary" not in execution.node_results


def test_each_write_commits_as_it_happens_so_a_run_cut_short_keeps_the_finished_items(looped, monkeypatch):
    workflow = looped()
    original = runner.run_node

    def database_gone_on_the_third_item(graph, node_id, results, labels, ctx):
        if node_id == "last" and results["loop"].data["index"] == 2:
            raise DatabaseError("server closed the connection unexpectedly")
        return original(graph, node_id, results, labels, ctx)

    monkeypatch.setattr(runner, "run_node", database_gone_on_the_third_item)

    with pytest.raises(DatabaseError):
        run_workflow(workflow, {"from": 10, "to": 14})

    assert state(workflow) == {"seen": 3, "last": 11}  # the cursor stands at the last finished item
    recorded = WorkflowExecution.objects.get(workflow=workflow).node_results
    assert recorded["last"]["iterationCount"] == 2


def test_body_nodes_read_the_current_item_index_and_their_own_iteration(org, user):
    body = [
        action("fields", "Fields", {"actionType": "Set Fields",
                                    "fields": f"position = {INDEX}\nnext = {LOOP} + 1"}),
        action("save", "Save", {"actionType": "State Set", "key": "k-<<@fields:Fields.position>>",
                                "value": "<<@fields:Fields.next>>"}),
    ]
    nodes, edges = loop_graph(items="['a', 'b']", body=body, after=[])
    nodes[2]["data"]["config"]["fields"] = f"position = {INDEX}\nlabel = {LOOP} + '!'"
    nodes[3]["data"]["config"]["value"] = "<<@fields:Fields.label>>"
    workflow = workflow_create(organization=org, user=user, name="Reads", nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.status == "success", execution.error
    assert state(workflow) == {"k-0": "a!", "k-1": "b!"}


def test_a_for_each_inside_another_runs_its_body_per_inner_item(org, user):
    inner = action("inner", "Inner", {"actionType": "For Each", "items": "range(1, <<@loop:Each.item>>)"})
    count = action("count", "Count", {"actionType": "State Increment", "key": "pairs"})
    nodes, edges = loop_graph(items="range(1, 3)", body=[inner], after=[])
    nodes.append(count)
    edges.append(edge("inner", "count", "each"))
    workflow = workflow_create(organization=org, user=user, name="Nested", nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.status == "success", execution.error
    assert state(workflow) == {"pairs": 1 + 2 + 3}
    assert execution.node_results["count"]["iterationCount"] == 6


def test_a_run_stops_at_10000_node_runs(looped, monkeypatch):
    monkeypatch.setattr(runner, "MAX_NODE_RUNS", 25)
    workflow = looped(items="range(1, 100)")

    execution = run_workflow(workflow, {})

    assert execution.status == "error"
    assert execution.error_code == "RUN_TOO_LONG"
    assert execution.node_results["loop"]["code"] == "LOOP_ITEM_FAILED"
    assert WorkflowState.objects.get(workflow=workflow, key="seen").value == 12  # 1 loop + 12 × 2 = 25 runs


def test_items_that_are_not_a_list_fail_the_loop_clearly(looped):
    workflow = looped(items="<<@trigger:Trigger.from>>")

    execution = run_workflow(workflow, {"from": 5})

    result = execution.node_results["loop"]
    assert (result["code"], execution.status) == ("EXPRESSION_INVALID", "error")
    assert "must be a list" in result["error"]


# --- Stop Loop: a loop that ends early --------------------------------------------------------------


def stop_at(test: str):
    """Trigger → For Each —each→ Last (State Set last = item) → Enough? (Condition ``test``) —true→
    Stop (Stop Loop); —done→ Summary (State Set summary = the loop's stopped)."""
    body = [
        action("last", "Last", {"actionType": "State Set", "key": "last", "value": LOOP}),
        action("enough", "Enough?", {"actionType": "Condition", "condition": test}),
    ]
    after = [action("summary", "Summary", {"actionType": "State Set", "key": "summary",
                                           "value": "<<@loop:Each.stopped>>"})]
    nodes, edges = loop_graph(body=body, after=after)
    nodes.append(action("stop", "Stop", {"actionType": "Stop Loop"}))
    edges.append(edge("enough", "stop", "true"))
    return nodes, edges


def test_a_stop_loop_ends_the_loop_after_its_item_and_done_runs(org, user):
    # given a loop over 1…10 that stops once the item reaches 4
    nodes, edges = stop_at(f"{LOOP} >= 4")
    workflow = workflow_create(organization=org, user=user, name="Stops", nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {"from": 1, "to": 10})

    # then items 1–4 ran, no item after, and done ran knowing it stopped
    assert execution.status == "success", execution.error
    assert execution.node_results["loop"]["data"] == {"count": 4, "truncated": False, "remaining": 6, "stopped": True}
    assert state(workflow) == {"last": 4, "summary": True}
    assert execution.node_results["stop"]["iterationCount"] == 4  # skipped three times, ran once
    assert [r.get("skipped", False) for r in execution.node_results["stop"]["iterations"]] == [True] * 3 + [False]


def test_a_loop_whose_stop_loop_never_runs_goes_through_every_item(org, user):
    nodes, edges = stop_at(f"{LOOP} > 100")
    workflow = workflow_create(organization=org, user=user, name="Never stops", nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {"from": 1, "to": 3})

    assert execution.node_results["loop"]["data"] == {"count": 3, "truncated": False, "remaining": 0, "stopped": False}
    assert state(workflow) == {"last": 3, "summary": False}


def test_the_stopping_item_finishes_its_other_nodes(org, user):
    # given a Stop Loop on one branch of the body and a write on another, after it in the order
    nodes, edges = stop_at(f"{LOOP} >= 2")
    nodes.append(action("also", "Also", {"actionType": "State Set", "key": "also", "value": LOOP}))
    edges.append(edge("enough", "also"))  # both branches of the Condition lead on
    nodes[-1]["data"]["config"]["value"] = LOOP
    edges[-1]["sourceHandle"] = "true"
    workflow = workflow_create(organization=org, user=user, name="Finishes", nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {"from": 1, "to": 5})

    assert execution.status == "success", execution.error
    assert state(workflow) == {"last": 2, "also": 2, "summary": True}


def test_a_stop_loop_in_an_inner_loop_ends_that_loop_only(org, user):
    # given: for each outer item 1…3, an inner loop over 1…5 that stops at 2
    inner = action("inner", "Inner", {"actionType": "For Each", "items": "range(1, 5)"})
    nodes, edges = loop_graph(items="range(1, 3)", body=[inner], after=[])
    nodes += [action("count", "Count", {"actionType": "State Increment", "key": "pairs"}),
              action("enough", "Enough?", {"actionType": "Condition", "condition": "<<@inner:Inner.item>> >= 2"}),
              action("stop", "Stop", {"actionType": "Stop Loop"})]
    edges += [edge("inner", "count", "each"), edge("count", "enough"), edge("enough", "stop", "true")]
    workflow = workflow_create(organization=org, user=user, name="Inner stop", nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    # then each outer item ran its inner loop twice: the outer loop went on
    assert execution.status == "success", execution.error
    assert state(workflow) == {"pairs": 3 * 2}
    assert execution.node_results["loop"]["data"]["stopped"] is False
    assert execution.node_results["inner"]["iterationCount"] == 3


def test_a_stop_loop_outside_every_loop_is_refused():
    nodes, edges = loop_graph()
    nodes.append(action("stop", "Stop", {"actionType": "Stop Loop"}))
    edges.append(edge("loop", "stop", "done"))

    assert ("stop", None, "LOOP_BODY_INVALID") in findings(nodes, edges)


def test_a_stop_loop_outside_every_loop_fails_the_run_that_reaches_it(org, user):
    # given such a graph stored without validation (as an old import could be)
    nodes, edges = loop_graph(after=[action("stop", "Stop", {"actionType": "Stop Loop"})])
    workflow = workflow_create(organization=org, user=user, name="Outside", nodes=nodes[:-1], edges=edges[:-1])
    type(workflow).objects.filter(pk=workflow.pk).update(nodes=nodes, edges=edges)
    workflow.refresh_from_db()

    execution = run_workflow(workflow, {"from": 1, "to": 2})

    assert (execution.status, execution.error_code) == ("error", "LOOP_BODY_INVALID")


def test_stopped_is_read_after_the_loop_only():
    nodes, edges = stop_at(f"{LOOP} >= 4")
    nodes[2]["data"]["config"]["value"] = "<<@loop:Each.stopped>>"  # Last, in the body

    assert ("last", "value", "LOOP_BODY_INVALID") in findings(nodes, edges)
    assert findings(*stop_at(f"{LOOP} >= 4")) == []


# --- Fail Run ----------------------------------------------------------------------------------------


def test_fail_run_fails_the_run_with_its_code_message_and_details(org, user):
    nodes = [trigger({"block": 7}),
             action("alert", "Alert", {"actionType": "State Set", "key": "alerted", "value": "yes"}),
             action("fail", "Too deep", {"actionType": "Fail Run",
                                         "message": "Reorg below block <<@trigger:Trigger.block>>: reset the cursor.",
                                         "details": {"block": "<<@trigger:Trigger.block>>"}}),
             action("after", "After", {"actionType": "State Set", "key": "after", "value": "never"})]
    edges = [edge("trigger", "alert"), edge("alert", "fail"), edge("fail", "after")]
    workflow = workflow_create(organization=org, user=user, name="Fails", nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {"block": 7})

    assert (execution.status, execution.error_code) == ("error", "FAILED_BY_WORKFLOW")
    assert execution.node_results["fail"] == {"success": False, "code": "FAILED_BY_WORKFLOW",
                                              "error": "Reorg below block 7: reset the cursor.",
                                              "details": {"block": 7}}
    assert "Reorg below block 7" in execution.error
    assert state(workflow) == {"alerted": "yes"}  # what ran before it stays; nothing after it runs


def test_fail_run_needs_a_message_and_takes_an_object_as_details():
    nodes = [trigger(), action("fail", "Fail", {"actionType": "Fail Run", "details": "[1, 2]"})]

    found = findings(nodes, [edge("trigger", "fail")])

    assert ("fail", "message", "REQUIRED") in found
    assert ("fail", "details", "CONFIG_INVALID") in found


# --- the validator --------------------------------------------------------------------------------


def findings(nodes, edges):
    return [(f["nodeId"], f["field"], f["code"]) for f in validate_graph(nodes, edges).as_dict()["errors"]]


def test_the_reference_loop_is_valid():
    assert findings(*loop_graph()) == []


def test_a_body_node_on_the_done_branch_too_is_refused():
    nodes, edges = loop_graph()
    edges.append(edge("loop", "last", "done"))

    assert ("last", None, "LOOP_BODY_INVALID") in findings(nodes, edges)


def test_a_body_node_reached_from_outside_the_loop_is_refused():
    nodes, edges = loop_graph()
    edges.append(edge("trigger", "last"))

    assert ("last", None, "LOOP_BODY_INVALID") in findings(nodes, edges)


def test_the_item_is_read_inside_the_body_only_and_the_count_after_it():
    nodes, edges = loop_graph()
    nodes[4]["data"]["config"]["value"] = LOOP  # Summary (done branch) reads the item
    nodes[3]["data"]["config"]["value"] = "<<@loop:Each.count>>"  # Last (body) reads the count

    found = findings(nodes, edges)

    assert ("summary", "value", "LOOP_BODY_INVALID") in found
    assert ("last", "value", "LOOP_BODY_INVALID") in found


def test_a_node_after_the_loop_may_read_a_body_node_as_its_last_iteration():
    nodes, edges = loop_graph()
    nodes[4]["data"]["config"]["value"] = "<<@last:Last.version>>"

    assert findings(nodes, edges) == []


def test_loops_nest_two_levels_at_most():
    nodes, edges = loop_graph(body=[
        action("l2", "Two", {"actionType": "For Each", "items": "range(1, 2)"}),
    ], after=[])
    nodes += [action("l3", "Three", {"actionType": "For Each", "items": "range(1, 2)"}),
              action("deep", "Deep", {"actionType": "State Increment", "key": "deep"})]
    edges += [edge("l2", "l3", "each"), edge("l3", "deep", "each")]

    assert ("l3", None, "LOOP_BODY_INVALID") in findings(nodes, edges)


def test_most_items_over_1000_is_refused():
    nodes, edges = loop_graph(max_items=1001)

    assert ("loop", "maxItems", "CONFIG_INVALID") in findings(nodes, edges)


def test_the_execution_id_is_a_built_in_of_every_node(org, user):
    nodes = [trigger(), action("save", "Save", {"actionType": "State Set", "key": "run",
                                                "value": "<<@__system:System.executionId>>"})]
    workflow = workflow_create(organization=org, user=user, name="Id", nodes=nodes, edges=[edge("trigger", "save")])

    execution = run_workflow(workflow, {})

    assert state(workflow) == {"run": str(execution.id)}

"""What a node may reference, for the editor's @ menu (keeperstate.engine.offers): upstream nodes only,
registry output fields, tokens."""

from __future__ import annotations

import pytest

from keeperstate.core.errors import CodedError
from keeperstate.engine.offers import reference_options
from keeperstate.engine.registry import all_actions, get_action
from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.examples import block_monitor_graph
from tests.factories import make_workflow


def node(node_id, action_type, label=None, **config):
    return {"id": node_id, "type": "action", "position": {"x": 0, "y": 0},
            "data": {"label": label or action_type, "type": "action", "config": {"actionType": action_type, **config}}}


def trigger(sample=None):
    config = {"triggerType": "Manual"}
    if sample is not None:
        config["sampleInput"] = sample
    return {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
            "data": {"label": "Trigger", "type": "trigger", "config": config}}


def chain(*ids):
    return [{"id": f"e{i}", "source": a, "target": b} for i, (a, b) in enumerate(zip(ids, ids[1:], strict=False))]


def action(action_id):
    definition = get_action(action_id)
    assert definition is not None, action_id
    return definition


def sources_by_node(result):
    return {s["nodeId"]: s for s in result["sources"]}


def fields_of(result, node_id):
    return [(f["field"], f["type"]) for f in sources_by_node(result)[node_id]["fields"]]


def test_monitor_state_set_is_offered_every_upstream_node_nearest_first():
    nodes, edges = block_monitor_graph()

    result = reference_options(nodes, edges, "state-set-1")

    assert [s["nodeId"] for s in result["sources"]] == ["condition-1", "state-get-1", "trigger", "__system"]
    version = next(f for f in sources_by_node(result)["state-get-1"]["fields"] if f["field"] == "version")
    assert version == {
        "field": "version",
        "type": "integer",
        "description": version["description"],
        "token": "<<@state-get-1:State Get.version>>",
    }
    assert "expectedVersion" in version["description"]


def test_state_get_offers_value_exists_version_and_expires_at():
    nodes = [trigger(), node("get", "State Get", key="k"), node("set", "State Set", key="k", value="1")]

    result = reference_options(nodes, chain("trigger", "get", "set"), "set")

    assert fields_of(result, "get") == [("value", "any"), ("exists", "boolean"), ("version", "integer"),
                                        ("expiresAt", "string")]


def test_state_set_offers_key_version_created_and_expires_at():
    nodes = [trigger(), node("set", "State Set", key="k", value="1"), node("cond", "Condition", condition="true")]

    result = reference_options(nodes, chain("trigger", "set", "cond"), "cond")

    offered = fields_of(result, "set")
    assert offered[:4] == [("key", "string"), ("version", "integer"), ("created", "boolean"), ("expiresAt", "string")]
    assert offered == [(f.name, f.type) for f in action("State Set").output_fields]


@pytest.mark.parametrize("action_id", [a.id for a in all_actions()])
def test_every_action_offers_exactly_its_registry_output_fields(action_id):
    nodes = [trigger(), node("upstream", action_id), node("after", "Condition", condition="true")]

    result = reference_options(nodes, chain("trigger", "upstream", "after"), "after")

    definition = action(action_id)
    # A node after a loop (not in its each branch) is offered the loop's after-loop fields only.
    assert fields_of(result, "upstream") == [(f.name, f.type) for f in definition.output_fields
                                             if f.loop_scope != "body"]
    assert all(f["token"] == f"<<@upstream:{definition.label}.{f['field']}>>"
               for f in sources_by_node(result)["upstream"]["fields"])


def test_a_loop_offers_item_and_index_in_its_body_and_its_count_after_it():
    nodes = [trigger(), node("loop", "For Each", items="range(1, 3)"), node("body", "State Increment", key="n"),
             node("after", "Condition", condition="true")]
    edges = [*chain("trigger", "loop"), {"id": "e-each", "source": "loop", "target": "body", "sourceHandle": "each"},
             {"id": "e-done", "source": "loop", "target": "after", "sourceHandle": "done"}]

    inside = reference_options(nodes, edges, "body")
    outside = reference_options(nodes, edges, "after")

    assert [f for f, _ in fields_of(inside, "loop")] == ["item", "index"]
    assert [f for f, _ in fields_of(outside, "loop")] == ["count", "truncated", "remaining", "stopped"]
    assert "body" in sources_by_node(outside)  # a body node, read after the loop as its last iteration


def test_set_fields_offers_the_fields_it_computes():
    nodes = [trigger(), node("calc", "Set Fields", fields="head = 5\nnext = head + 1"), node("get", "State Get",
                                                                                             key="k")]

    result = reference_options(nodes, chain("trigger", "calc", "get"), "get")

    assert fields_of(result, "calc") == [("head", "integer"), ("next", "integer")]


def test_condition_offers_its_result():
    nodes = [trigger(), node("cond", "Condition", condition="true"), node("get", "State Get", key="k")]

    result = reference_options(nodes, chain("trigger", "cond", "get"), "get")

    assert fields_of(result, "cond") == [("result", "boolean")]
    assert sources_by_node(result)["cond"]["fields"][0]["token"] == "<<@cond:Condition.result>>"


def test_trigger_offers_the_fields_of_its_sample_input():
    sample = {"block": 100, "hash": "0xab", "ok": True, "gas": 1.5, "tx": {"from": "0x1", "logs": [1]}, "n": None}
    nodes = [trigger(sample), node("get", "State Get", key="k")]

    result = reference_options(nodes, chain("trigger", "get"), "get")

    assert fields_of(result, "trigger") == [
        ("block", "integer"), ("hash", "string"), ("ok", "boolean"), ("gas", "number"), ("tx", "object"),
        ("tx.from", "string"), ("tx.logs", "array"), ("n", "null"),
    ]
    tokens = [f["token"] for f in sources_by_node(result)["trigger"]["fields"]]
    assert tokens[0] == "<<@trigger:Trigger.block>>"
    assert "<<@trigger:Trigger.tx.from>>" in tokens


def test_sample_input_typed_as_text_is_read_too():
    nodes = [trigger('{"block": 100}'), node("get", "State Get", key="k")]

    result = reference_options(nodes, chain("trigger", "get"), "get")

    assert fields_of(result, "trigger") == [("block", "integer")]


def test_a_trigger_without_sample_input_offers_no_field_but_says_how_to_get_them():
    nodes = [trigger(), node("get", "State Get", key="k")]

    source = sources_by_node(reference_options(nodes, chain("trigger", "get"), "get"))["trigger"]

    assert source["fields"] == []
    assert "sample input" in source["hint"]


def test_system_builtins_come_last():
    nodes = [trigger(), node("get", "State Get", key="k")]

    system = reference_options(nodes, chain("trigger", "get"), "get")["sources"][-1]

    assert system["nodeId"] == "__system"
    assert [f["token"] for f in system["fields"]] == [
        "<<@__system:System.unixTimestamp>>",
        "<<@__system:System.unixTimestampMs>>",
        "<<@__system:System.isoTimestamp>>",
        "<<@__system:System.executionId>>",  # DESIGN.md §14
    ]


def test_never_a_generic_data_field():
    nodes, edges = block_monitor_graph()
    nodes.append(node("mystery", "Not Registered"))
    edges.append({"id": "e9", "source": "trigger", "target": "mystery"})
    edges.append({"id": "e10", "source": "mystery", "target": "state-set-1"})

    result = reference_options(nodes, edges, "state-set-1")

    every_field = [f["field"] for s in result["sources"] for f in s["fields"]]
    assert "data" not in every_field
    assert sources_by_node(result)["mystery"]["fields"] == []


def test_downstream_and_unconnected_nodes_are_not_offered():
    nodes, edges = block_monitor_graph()
    nodes.append(node("loose", "State Get", key="other"))

    result = reference_options(nodes, edges, "state-get-1")

    assert [s["nodeId"] for s in result["sources"]] == ["trigger", "__system"]


def test_the_trigger_itself_has_nothing_upstream():
    nodes, edges = block_monitor_graph()

    assert [s["nodeId"] for s in reference_options(nodes, edges, "trigger")["sources"]] == ["__system"]


@pytest.mark.django_db
def test_a_label_with_dots_makes_a_token_that_resolves(org, user):
    # given a State Get whose label has dots, and a State Set fed from the version the @ list offers
    nodes = [
        trigger({"block": 1}),
        node("get-1", "State Get", label="Read v1.2 cursor", key="cursor"),
        node("set-1", "State Set", key="cursor", value="<<@trigger:Trigger.block>>"),
    ]
    edges = chain("trigger", "get-1", "set-1")
    get_source = sources_by_node(reference_options(nodes, edges, "set-1"))["get-1"]
    offered = {f["field"]: f["token"] for f in get_source["fields"]}
    assert offered["version"] == "<<@get-1:Read v1.2 cursor.version>>"
    nodes[2]["data"]["config"]["expectedVersion"] = offered["version"]

    # when it runs twice
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    first = run_workflow(workflow, {"block": 1})
    second = run_workflow(workflow, {"block": 2})

    # then the token resolved to the version each time (0, then 1)
    assert first.status == "success", first.error
    assert second.status == "success", second.error
    assert WorkflowState.objects.get(workflow=workflow, key="cursor").version == 2


@pytest.mark.parametrize(
    ("nodes", "edges", "node_id", "code"),
    [
        ([trigger(), node("a", "State Get")], [{"id": "e1", "source": "trigger", "target": "gone"}], "a",
         "WORKFLOW_INVALID"),
        ([trigger(), node("a", "State Get"), node("b", "State Get")],
         [*chain("trigger", "a", "b"), {"id": "back", "source": "b", "target": "a"}], "b", "CYCLE"),
        ([trigger()], [], "not-there", "NODE_NOT_FOUND"),
        ([trigger()], [], None, "NODE_NOT_FOUND"),
        ("nodes", [], "trigger", "WORKFLOW_INVALID"),
        ([trigger(), trigger()], [], "trigger", "WORKFLOW_INVALID"),
    ],
)
def test_graphs_no_workflow_can_have_are_refused_with_a_code(nodes, edges, node_id, code):
    with pytest.raises(CodedError) as caught:
        reference_options(nodes, edges, node_id)

    assert caught.value.code == code
    assert caught.value.message

"""validate_graph: what the editor's Validate, the API and every save report."""

from __future__ import annotations

import copy

import pytest

from keeperstate.engine.validation import validate_graph
from keeperstate.workflows.examples import block_monitor_graph


@pytest.fixture
def monitor():
    return copy.deepcopy(block_monitor_graph())


def node(nodes, node_id):
    return next(n for n in nodes if n["id"] == node_id)


def codes(report, kind="errors"):
    return [(f["nodeId"], f["field"], f["code"]) for f in report.as_dict()[kind]]


def test_the_monitor_is_valid(monitor):
    report = validate_graph(*monitor)

    assert report.as_dict() == {"valid": True, "errors": [], "warnings": []}


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("ttl", "12abc", "STATE_INVALID_TTL"),
        ("ttl", "-1", "STATE_INVALID_TTL"),
        ("ttl", "1.5", "STATE_INVALID_TTL"),
        ("expectedVersion", "<<@state-get-1:State Get.version>><<@state-get-1:State Get.version>>", "INVALID_NUMBER"),
        ("expectedVersion", "v<<@state-get-1:State Get.version>>", "INVALID_NUMBER"),
        ("value", "null", "STATE_INVALID_VALUE"),
        ("key", "a\nb", "STATE_INVALID_KEY"),
        ("onConflict", "retry", "INVALID_CHOICE"),
    ],
)
def test_field_problems_are_reported_at_node_and_field(monitor, field, value, code):
    node(monitor[0], "state-set-1")["data"]["config"][field] = value

    report = validate_graph(*monitor)

    assert ("state-set-1", field, code) in codes(report)
    assert not report.valid


def test_a_single_reference_in_a_numeric_field_is_fine(monitor):
    node(monitor[0], "state-set-1")["data"]["config"]["ttl"] = " <<@trigger:Trigger.block>> "

    assert validate_graph(*monitor).valid


def test_required_field_missing(monitor):
    node(monitor[0], "state-get-1")["data"]["config"]["key"] = "  "

    assert ("state-get-1", "key", "REQUIRED") in codes(validate_graph(*monitor))


def test_reference_to_a_missing_node_and_to_a_downstream_node(monitor):
    config = node(monitor[0], "state-get-1")["data"]["config"]
    config["key"] = "<<@gone:Gone.x>>-<<@state-set-1:State Set.version>>"

    found = codes(validate_graph(*monitor))

    assert ("state-get-1", "key", "REFERENCE_MISSING_NODE") in found
    assert ("state-get-1", "key", "REFERENCE_NOT_UPSTREAM") in found


def test_reference_to_a_field_an_action_does_not_declare_is_an_error(monitor):
    # An action declares its outputs, so no run will ever have the field (issue 21).
    node(monitor[0], "state-set-1")["data"]["config"]["value"] = "<<@state-get-1:State Get.data>>"

    report = validate_graph(*monitor)

    assert not report.valid
    assert ("state-set-1", "value", "REFERENCE_UNKNOWN_FIELD") in codes(report)


def test_reference_to_a_field_the_sample_input_lacks_is_a_warning(monitor):
    # A sample input is only an example of the run input: a run may carry the field.
    node(monitor[0], "state-set-1")["data"]["config"]["value"] = "<<@trigger:Trigger.height>>"

    report = validate_graph(*monitor)

    assert report.valid
    assert ("state-set-1", "value", "REFERENCE_UNKNOWN_FIELD") in codes(report, "warnings")


def test_unknown_action_and_bad_condition(monitor):
    node(monitor[0], "state-get-1")["data"]["config"]["actionType"] = "Teleport"
    node(monitor[0], "condition-1")["data"]["config"]["condition"] = "__import__('os')"

    found = codes(validate_graph(*monitor))

    assert ("state-get-1", "actionType", "UNKNOWN_ACTION") in found
    assert ("condition-1", "condition", "CONDITION_INVALID") in found


def test_condition_edges_need_a_branch_but_state_set_edges_default_to_success(monitor):
    nodes, edges = monitor
    del edges[2]["sourceHandle"]
    nodes.append({"id": "after", "type": "action", "data": {"label": "After", "config": {"actionType": "State Get",
                                                                                        "key": "k"}}})
    edges.append({"id": "e4", "source": "state-set-1", "target": "after"})

    found = codes(validate_graph(nodes, edges))

    assert found == [("condition-1", None, "INVALID_HANDLE")]


@pytest.mark.parametrize("triggers", [0, 2])
def test_exactly_one_trigger(monitor, triggers):
    nodes, edges = monitor
    if triggers == 0:
        nodes[0]["type"] = "action"
    else:
        nodes.append({"id": "t2", "type": "trigger", "data": {"label": "T2", "config": {"triggerType": "Manual"}}})

    assert (None, None, "TRIGGER_COUNT") in codes(validate_graph(nodes, edges))


def test_a_cycle_is_an_error(monitor):
    nodes, edges = monitor
    edges.append({"id": "back", "source": "state-set-1", "target": "state-get-1"})

    assert [c for _n, _f, c in codes(validate_graph(nodes, edges))] == ["CYCLE"]


def test_unreachable_node_is_a_warning(monitor):
    nodes, edges = monitor
    nodes.append({"id": "island", "type": "action", "data": {"label": "Island", "config": {"actionType": "State Get",
                                                                                         "key": "k"}}})

    assert ("island", None, "UNREACHABLE") in codes(validate_graph(nodes, edges), "warnings")


@pytest.mark.parametrize("bad_id", ["state get 1", "a:b", "x<y", ""])
def test_node_ids_must_be_nameable_by_references(monitor, bad_id):
    nodes, edges = monitor
    nodes.append({"id": bad_id, "type": "action", "data": {"label": "X", "config": {"actionType": "State Get"}}})

    assert [c for _n, _f, c in codes(validate_graph(nodes, edges))] == ["WORKFLOW_INVALID"]


def test_labels_cannot_contain_reference_delimiters(monitor):
    node(monitor[0], "state-get-1")["data"]["label"] = "Get >> cursor"

    assert ("state-get-1", "label", "INVALID_LABEL") in codes(validate_graph(*monitor))


def test_sample_input_must_be_an_object(monitor):
    monitor[0][0]["data"]["config"]["sampleInput"] = [1, 2]

    assert ("trigger", "sampleInput", "CONFIG_INVALID") in codes(validate_graph(*monitor))


@pytest.mark.parametrize("shape", [({}, []), ([], {}), (["x"], []), ([{"id": "a"}], [{"source": "a"}])])
def test_shapeless_input_is_one_clear_error(shape):
    report = validate_graph(*shape)

    assert [f["code"] for f in report.as_dict()["errors"]] == ["WORKFLOW_INVALID"]


@pytest.mark.parametrize("data", [[1], "x", 3])
def test_node_data_that_is_not_an_object_is_one_clear_error(monitor, data):
    monitor[0][1]["data"] = data

    assert [c for _n, _f, c in codes(validate_graph(*monitor))] == ["WORKFLOW_INVALID"]


@pytest.mark.parametrize("trigger_type", [["Manual"], {"a": 1}, 5, "Cron"])
def test_trigger_type_must_be_a_known_name(monitor, trigger_type):
    monitor[0][0]["data"]["config"]["triggerType"] = trigger_type

    assert ("trigger", "triggerType", "UNKNOWN_TRIGGER") in codes(validate_graph(*monitor))


@pytest.mark.parametrize(
    ("where", "value"),
    [("label", 5), ("position", {"x": "abc", "y": 0}), ("type", ["action"]), ("data", {"label": {"text": "x"}})],
)
def test_a_node_of_the_wrong_shape_is_refused_on_every_way_in(monitor, where, value):
    # The API refuses these as field errors; the validator refuses them for every other way in
    # (an import, the demo, a command), so no way in stores a label of 5.
    target = node(monitor[0], "state-get-1")
    if where == "label":
        target["data"]["label"] = value
    else:
        target[where] = value

    report = validate_graph(*monitor)

    assert [(f["nodeId"], f["code"]) for f in report.as_dict()["errors"]] == [("state-get-1", "INVALID_SHAPE")]


def set_condition(monitor, text, sample=None):
    node(monitor[0], "condition-1")["data"]["config"]["condition"] = text
    if sample is not None:
        node(monitor[0], "trigger")["data"]["config"]["sampleInput"] = sample


@pytest.mark.parametrize(
    ("sample", "condition", "problem"),
    [
        ({"block": "0x10"}, "<<@trigger:Trigger.block>> > 15", "Cannot compare text with a number"),
        ({"block": "0x10", "head": "0xf"}, "<<@trigger:Trigger.block>> > <<@trigger:Trigger.head>>",
         "Wrap each side in number()"),
        ({"block": 7}, "<<@state-get-1:State Get.exists>> > 1", "Cannot compare a boolean with a number"),
        ({"block": "abc"}, "<<@trigger:Trigger.block>> + 1 > 2", "Wrap text in number()"),
    ],
)
def test_a_comparison_known_to_fail_is_a_validation_error(monitor, sample, condition, problem):
    # The types known before the run (the sample input, declared outputs) tell it now, at the node
    # and field, not as a surprise in a run (issue 21).
    set_condition(monitor, condition, sample)

    report = validate_graph(*monitor)

    errors = [f for f in report.as_dict()["errors"] if f["nodeId"] == "condition-1"]
    assert [(f["field"], f["code"]) for f in errors] == [("condition", "CONDITION_INVALID")]
    assert problem in errors[0]["message"]


def test_comparisons_of_unknown_or_wrapped_values_are_left_to_the_run(monitor):
    set_condition(monitor, "number(<<@trigger:Trigger.block>>) > number(<<@state-get-1:State Get.value>>)",
                  {"block": "0x10"})

    assert validate_graph(*monitor).valid


def test_set_fields_checks_names_and_the_names_it_may_use(monitor):
    node(monitor[0], "condition-1")["data"]["config"] = {
        "actionType": "Set Fields", "fields": "head = number(<<@trigger:Trigger.block>>)\nstart = head + nope",
    }

    report = validate_graph(*monitor)

    assert [(f["nodeId"], f["field"], f["code"]) for f in report.as_dict()["errors"]][:1] == [
        ("condition-1", "fields", "EXPRESSION_INVALID")]
    assert "'nope' is not a value" in report.as_dict()["errors"][0]["message"]


def _post_after_hex(body):
    """Trigger → Hex (Set Fields: hex = hex(42), a text) → Send (HTTP Request with ``body``)."""
    trigger = {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
               "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": "Manual"}}}
    hexed = {"id": "hex", "type": "action", "position": {"x": 0, "y": 100},
             "data": {"label": "Hex", "type": "action",
                      "config": {"actionType": "Set Fields", "fields": "hex = hex(42)\nn = 42"}}}
    send = {"id": "send", "type": "action", "position": {"x": 0, "y": 200},
            "data": {"label": "Send", "type": "action",
                     "config": {"actionType": "HTTP Request", "method": "POST", "url": "https://example.com/",
                                "body": body}}}
    edges = [{"id": "e1", "source": "trigger", "target": "hex"}, {"id": "e2", "source": "hex", "target": "send"}]
    return [trigger, hexed, send], edges


@pytest.mark.parametrize("token", ["<<@hex:Hex.hex>>", "<<@__secrets:Secrets.API_KEY>>",
                                   "<<@__system:System.executionId>>"])
def test_a_text_reference_outside_quotes_in_a_json_body_is_a_warning_at_the_field(token):
    report = validate_graph(*_post_after_hex(f'{{"params": [{token}, false], "n": <<@hex:Hex.n>>}}'))

    assert report.valid
    assert codes(report, "warnings") == [("send", "body", "INVALID_JSON")]
    assert f'("{token}")' in report.warnings[0].message


@pytest.mark.parametrize("body", [
    '{"params": ["<<@hex:Hex.hex>>", false], "n": <<@hex:Hex.n>>}',  # quoted text, a bare number
    "block <<@hex:Hex.hex>> seen",  # text, not JSON: sent as text, as written
    "<<@hex:Hex.hex>>",  # one reference keeps its type
])
def test_text_references_quoted_or_in_plain_text_are_fine(body):
    report = validate_graph(*_post_after_hex(body))

    assert report.as_dict() == {"valid": True, "errors": [], "warnings": []}

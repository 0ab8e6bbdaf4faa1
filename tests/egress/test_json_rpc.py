"""HTTP Request with jsonRpc (DESIGN.md §14) against the real local server's JSON-RPC endpoint
(tests/egress/server.py, ``/rpc``): the request completed, ``data.result``, and HTTP_RPC_ERROR."""

from __future__ import annotations

import pytest

from keeperstate.engine.registry import get_action
from keeperstate.executions.service import run_workflow
from keeperstate.state.store import StateScope, state_get
from tests.egress.test_http_request import chain, request
from tests.factories import make_workflow


def rpc(server, method, *, path="/rpc", **config):
    return request({"url": f"{server.url}{path}", "jsonRpc": True, "body": {"method": method, "params": []},
                    **config})


def test_the_request_is_completed_and_posted(allow_server):
    # given a body with a method only, and the form's default method GET
    result = request({"url": f"{allow_server.url}/rpc", "method": "GET", "jsonRpc": True,
                      "body": {"method": "echo", "params": ["0x1", False]}})

    # then the server got a JSON-RPC 2.0 request with an id, as a JSON POST
    assert result["success"] is True, result
    seen = result["data"]["result"]
    assert seen["request"] == {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": ["0x1", False]}
    assert seen["httpMethod"] == "POST"
    assert seen["contentType"] == "application/json"


def test_the_body_keeps_its_own_id_and_version(allow_server):
    result = request({"url": f"{allow_server.url}/rpc", "jsonRpc": True,
                      "body": {"jsonrpc": "2.0", "id": "mine-7", "method": "echo"}})

    assert result["data"]["result"]["request"] == {"jsonrpc": "2.0", "id": "mine-7", "method": "echo"}
    assert result["data"]["body"]["id"] == "mine-7"


def test_body_keeps_the_whole_answer_and_result_is_its_result(allow_server):
    result = rpc(allow_server, "echo")

    body = result["data"]["body"]
    assert set(body) == {"jsonrpc", "id", "result"}
    assert result["data"]["result"] == body["result"]
    assert result["data"]["status"] == 200


def test_a_null_result_stays_null(allow_server):
    result = rpc(allow_server, "null")

    assert result["success"] is True
    assert "result" in result["data"]
    assert result["data"]["result"] is None


def test_an_rpc_error_fails_the_node_with_its_code_message_and_data(allow_server):
    result = rpc(allow_server, "fail")

    assert result["success"] is False
    assert result["code"] == "HTTP_RPC_ERROR"
    assert result["details"] == {"code": -32000, "message": "execution reverted", "data": "0x08c379a0"}
    assert "-32000" in result["error"]
    assert "execution reverted" in result["error"]


def test_method_not_found_is_an_rpc_error_without_data(allow_server):
    result = rpc(allow_server, "eth_nope")

    assert result["code"] == "HTTP_RPC_ERROR"
    assert result["details"] == {"code": -32601, "message": "the method eth_nope does not exist", "data": None}


def test_an_rpc_error_with_fail_on_error_off_is_handed_over(allow_server):
    result = rpc(allow_server, "fail", failOnError=False)

    assert result["success"] is True
    assert result["data"]["result"] is None
    assert result["data"]["body"]["error"]["code"] == -32000


def test_an_rpc_error_under_an_http_error_status_is_still_the_rpc_error(allow_server):
    result = rpc(allow_server, "fail", path="/rpc?status=500")

    assert result["code"] == "HTTP_RPC_ERROR"
    assert result["details"]["code"] == -32000


def test_an_http_error_status_without_an_rpc_error_is_http_status(allow_server):
    result = request({"url": f"{allow_server.url}/status/502", "jsonRpc": True, "body": {"method": "x"}})

    assert result["code"] == "HTTP_STATUS"
    assert result["details"]["status"] == 502


def test_an_answer_that_is_no_rpc_response_fails(allow_server):
    result = rpc(allow_server, "empty")  # 200 with neither result nor error

    assert result["code"] == "HTTP_RPC_ERROR"
    assert result["details"]["code"] is None


def test_a_text_answer_that_is_no_rpc_response_fails(allow_server):
    result = request({"url": f"{allow_server.url}/text", "jsonRpc": True, "body": {"method": "x"}})

    assert result["code"] == "HTTP_RPC_ERROR"
    assert "plain words" in result["error"]


def test_the_answer_is_read_as_json_whatever_its_content_type(allow_server):
    result = rpc(allow_server, "null", path="/rpc?type=text/plain")

    assert result["success"] is True
    assert result["data"]["body"]["jsonrpc"] == "2.0"
    assert result["data"]["result"] is None


@pytest.mark.parametrize("body", [None, "", "eth_blockNumber", [{"method": "echo"}], {"params": []}, {"method": ""}])
def test_a_body_that_is_no_request_object_is_refused(allow_server, body):
    result = request({"url": f"{allow_server.url}/rpc", "jsonRpc": True, "body": body})

    assert result["success"] is False
    assert result["code"] == "CONFIG_INVALID"
    assert allow_server.hits == []


def test_without_json_rpc_nothing_changes(allow_server):
    result = request({"url": f"{allow_server.url}/rpc", "method": "POST", "body": {"method": "echo"}})

    assert result["success"] is True
    assert "result" not in result["data"]
    assert result["data"]["body"]["result"]["request"] == {"method": "echo"}


def test_json_rpc_text_from_the_editor_is_a_request(allow_server):
    result = request({"url": f"{allow_server.url}/rpc", "jsonRpc": "true", "body": '{"method": "echo"}'})

    assert result["data"]["result"]["request"]["jsonrpc"] == "2.0"


@pytest.mark.parametrize(("raw", "stored"), [(True, True), ("true", True), (" False ", False), (False, False)])
def test_the_json_rpc_field_parses_to_a_boolean(raw, stored):
    field = get_action("HTTP Request").config_field("jsonRpc")

    assert field.parse(raw) is stored


def test_the_json_rpc_field_refuses_other_text():
    from keeperstate.core.errors import CodedError

    field = get_action("HTTP Request").config_field("jsonRpc")

    with pytest.raises(CodedError) as raised:
        field.parse("yes")
    assert (raised.value.code, raised.value.field) == ("CONFIG_INVALID", "jsonRpc")


def test_result_is_an_output_field_described_as_json_rpc_only():
    output = get_action("HTTP Request").output_field("result")

    assert output is not None
    assert output.description.startswith("JSON-RPC only")


def test_result_feeds_later_nodes_in_a_workflow(allow_server, db, org, user):
    # given: the head's number from one call, sent on in the next call's params and stored
    url = f"{allow_server.url}/rpc"
    head_number = "<<@head:Head.result.request.params[0]>>"
    nodes, edges = chain(
        ("head", "Head", {"actionType": "HTTP Request", "url": url, "jsonRpc": True,
                          "body": {"method": "echo", "params": ["0x1a2"]}}),
        ("block", "Block", {"actionType": "HTTP Request", "url": url, "jsonRpc": True,
                            "body": f'{{"method": "echo", "params": ["{head_number}", false]}}'}),
        ("save", "Save", {"actionType": "State Set", "key": "params",
                          "value": "<<@block:Block.result.request.params>>"}),
    )
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.status == "success", execution.node_results
    scope = StateScope(organization_id=org.id, workflow_id=workflow.id)
    assert state_get(scope=scope, key="params").value == ["0x1a2", False]


def test_an_rpc_error_stops_the_run_at_its_node(allow_server, db, org, user):
    nodes, edges = chain(
        ("head", "Head", {"actionType": "HTTP Request", "url": f"{allow_server.url}/rpc", "jsonRpc": True,
                          "body": {"method": "fail"}}),
        ("save", "Save", {"actionType": "State Set", "key": "head", "value": "<<@head:Head.result>>"}),
    )
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.status == "error"
    assert execution.error_code == "HTTP_RPC_ERROR"
    assert execution.node_results["head"]["details"]["code"] == -32000
    assert "save" not in execution.node_results or execution.node_results["save"].get("success") is not True

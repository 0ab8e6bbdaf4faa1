"""HTTP Request against a real local server (tests/egress/server.py), allowed as host:port."""

from __future__ import annotations

import pytest

from keeperstate.engine.context import RunContext
from keeperstate.executions.service import run_workflow
from tests.actions import run_action
from tests.factories import make_workflow


def request(config, **kwargs):
    result, _handle = run_action("HTTP Request", config, RunContext(), **kwargs)
    return result


def chain(*nodes):
    """A workflow graph: trigger → nodes in order."""
    graph_nodes = [{"id": "trigger", "type": "trigger",
                    "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": "Manual"}}}]
    edges = []
    previous = "trigger"
    for node_id, label, config in nodes:
        data = {"label": label, "type": "action", "config": config}
        graph_nodes.append({"id": node_id, "type": "action", "data": data})
        edges.append({"id": f"e-{node_id}", "source": previous, "target": node_id})
        previous = node_id
    return graph_nodes, edges


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_each_method_reaches_the_server(allow_server, method):
    result = request({"method": method, "url": f"{allow_server.url}/echo"})

    assert result["success"] is True
    assert result["data"]["status"] == 200
    assert result["data"]["ok"] is True
    assert result["data"]["body"]["method"] == method
    assert isinstance(result["data"]["durationMs"], int)


def test_headers_and_query_are_sent(allow_server):
    result = request({
        "url": f"{allow_server.url}/echo?keep=1",
        "headers": {"X-Api-Key": "k-123", "Accept": "application/json"},
        "query": {"from": "19000000", "q": "a b&c"},
    })

    body = result["data"]["body"]
    assert body["headers"]["x-api-key"] == "k-123"
    assert body["query"] == {"keep": "1", "from": "19000000", "q": "a b&c"}


def test_json_body_is_sent_as_json(allow_server):
    result = request({"method": "POST", "url": f"{allow_server.url}/echo", "body": {"block": 5, "ok": True}})

    body = result["data"]["body"]
    assert body["contentType"] == "application/json"
    assert body["body"] == '{"block":5,"ok":true}'


def test_json_text_from_the_editor_is_sent_as_json(allow_server):
    result = request({"method": "POST", "url": f"{allow_server.url}/echo", "body": '{"block": 5}'})

    assert result["data"]["body"]["contentType"] == "application/json"


def test_text_body_is_sent_as_text(allow_server):
    result = request({"method": "POST", "url": f"{allow_server.url}/echo", "body": "hello there"})

    body = result["data"]["body"]
    assert body["contentType"] == "text/plain; charset=utf-8"
    assert body["body"] == "hello there"


def test_text_answer_is_text(allow_server):
    result = request({"url": f"{allow_server.url}/text"})

    assert result["data"]["body"] == "plain words"
    assert result["data"]["headers"]["content-type"].startswith("text/plain")


def test_response_type_text_keeps_json_as_text(allow_server):
    result = request({"url": f"{allow_server.url}/block", "responseType": "text"})

    assert isinstance(result["data"]["body"], str)
    assert '"block"' in result["data"]["body"]


def test_response_type_json_refuses_text(allow_server):
    result = request({"url": f"{allow_server.url}/text", "responseType": "json"})

    assert result["code"] == "HTTP_RESPONSE_NOT_JSON"


def test_references_in_url_path_headers_and_body(allow_server):
    results = {"trigger": {"success": True, "data": {"id": 42, "token": "tok-9", "block": 7}}}
    labels = {"trigger": "Trigger"}

    result = request(
        {
            "method": "POST",
            "url": f"{allow_server.url}/echo/<<@trigger:Trigger.id>>",
            "headers": {"Authorization": "Bearer <<@trigger:Trigger.token>>"},
            "body": '{"block": <<@trigger:Trigger.block>>}',
        },
        results=results, labels=labels,
    )

    body = result["data"]["body"]
    assert body["path"] == "/echo/42"
    assert body["headers"]["authorization"] == "Bearer tok-9"
    assert body["body"] == '{"block":7}'


@pytest.mark.django_db
def test_json_body_fields_are_usable_downstream_with_their_types(allow_server, org, user):
    # given: fetch a block, then store its fields
    nodes, edges = chain(
        ("fetch", "Fetch", {"actionType": "HTTP Request", "url": f"{allow_server.url}/block"}),
        ("check", "Check", {"actionType": "Condition",
                            "condition": "<<@fetch:Fetch.body.block>> > 19000000 and <<@fetch:Fetch.body.final>>"}),
        ("save", "Save", {"actionType": "State Set", "key": "cursor", "value": "<<@fetch:Fetch.body.block>>"}),
        ("save-tx", "Save tx", {"actionType": "State Set", "key": "tx", "value": "<<@fetch:Fetch.body.txs[0]>>"}),
    )
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    # when
    execution = run_workflow(workflow, {})

    # then: the number stays a number, the object an object
    assert execution.status == "success", execution.node_results
    assert execution.node_results["check"]["data"]["result"] is True
    from keeperstate.state.store import StateScope, state_get

    scope = StateScope(organization_id=org.id, workflow_id=workflow.id)
    assert state_get(scope=scope, key="cursor").value == 19000123
    assert state_get(scope=scope, key="tx").value == {"id": "t1"}


def test_404_fails_the_node_with_http_status(allow_server):
    result = request({"url": f"{allow_server.url}/status/404"})

    assert result["success"] is False
    assert result["code"] == "HTTP_STATUS"
    assert result["details"]["status"] == 404
    assert "status 404" in result["error"]


def test_500_with_fail_on_error_off_succeeds_with_the_answer(allow_server):
    result = request({"url": f"{allow_server.url}/status/500", "failOnError": False})

    assert result["success"] is True
    assert result["data"]["status"] == 500
    assert result["data"]["ok"] is False
    assert result["data"]["body"] == {"error": "status 500"}


def test_fail_on_error_as_editor_text_false(allow_server):
    result = request({"url": f"{allow_server.url}/status/404", "failOnError": "false"})

    assert result["success"] is True
    assert result["data"]["status"] == 404


def test_slow_server_hits_the_timeout(allow_server):
    result = request({"url": f"{allow_server.url}/slow?s=3", "timeout": 1})

    assert result["code"] == "HTTP_TIMEOUT"


def test_timeout_above_30_is_refused_before_sending(allow_server):
    result = request({"url": f"{allow_server.url}/echo", "timeout": 31})

    assert result["code"] == "CONFIG_INVALID"
    assert allow_server.hits == []


def test_two_megabyte_answer_is_refused(allow_server):
    result = request({"url": f"{allow_server.url}/big?bytes={2 * 1024 * 1024}"})

    assert result["code"] == "HTTP_RESPONSE_TOO_LARGE"


def test_two_megabyte_answer_without_length_is_refused_while_reading(allow_server):
    result = request({"url": f"{allow_server.url}/big?bytes={2 * 1024 * 1024}&chunked=1"})

    assert result["code"] == "HTTP_RESPONSE_TOO_LARGE"


def test_limit_is_a_setting(allow_server, settings):
    settings.KEEPERSTATE_HTTP_MAX_BYTES = 1000

    assert request({"url": f"{allow_server.url}/big?bytes=1001"})["code"] == "HTTP_RESPONSE_TOO_LARGE"
    assert request({"url": f"{allow_server.url}/big?bytes=1000"})["success"] is True


def test_redirects_are_followed(allow_server):
    result = request({"url": f"{allow_server.url}/redirect/5"})

    assert result["success"] is True
    assert result["data"]["body"]["path"] == "/echo"


def test_redirects_are_capped_at_five(allow_server):
    result = request({"url": f"{allow_server.url}/redirect/6"})

    assert result["code"] == "HTTP_TOO_MANY_REDIRECTS"
    assert len(allow_server.hits) == 6  # the first request and five redirects, no seventh


def test_connection_refused_is_request_failed(settings):
    settings.KEEPERSTATE_HTTP_ALLOW = ["127.0.0.1"]

    result = request({"url": "http://127.0.0.1:9/nothing"})

    assert result["code"] == "HTTP_REQUEST_FAILED"


def test_url_without_http_scheme_is_refused():
    result = request({"url": "file:///etc/passwd"})

    assert result["code"] == "CONFIG_INVALID"


def test_header_with_a_line_break_is_refused(allow_server):
    result = request({"url": f"{allow_server.url}/echo", "headers": {"X-A": "one\r\nX-Injected: 1"}})

    assert result["code"] == "CONFIG_INVALID"
    assert allow_server.hits == []


@pytest.mark.parametrize("path", ["/nul-json", "/nul-text"])
def test_nul_in_an_answer_is_storable(allow_server, db, org, user, path):
    nodes, edges = chain(("fetch", "Fetch", {"actionType": "HTTP Request", "url": f"{allow_server.url}{path}"}))
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    execution.refresh_from_db()
    assert execution.status == "success"
    assert "\u0000" not in str(execution.node_results["fetch"]["data"]["body"])

"""/mcp/ through a real gunicorn, with the SDK's own client (DESIGN.md §16): the handshake, the
tools of §16, each tool called, refusals as isError with the API's code, tokens, organization
isolation, idempotent runs, the audit log and the state history."""

from __future__ import annotations

import json
import uuid

import httpx2
import pytest

from keeperstate.audit.models import AuditEvent
from keeperstate.executions.models import WorkflowExecution
from keeperstate.state.models import WorkflowStateEvent
from keeperstate.workflows.examples import block_monitor_graph
from tests.mcp.conftest import answer, connected, run, start_site, stop_site, token_for

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {"list_actions", "list_workflows", "get_workflow", "validate_workflow", "create_workflow",
         "update_workflow", "run_workflow", "get_execution", "list_executions", "get_state", "set_state"}
ARGUMENTS = {
    "list_actions": set(), "list_workflows": {"organization"}, "get_workflow": {"workflowId"},
    "validate_workflow": {"nodes", "edges"}, "create_workflow": {"name", "nodes", "edges", "organization"},
    "update_workflow": {"workflowId", "name", "nodes", "edges", "active"},
    "run_workflow": {"workflowId", "input", "idempotencyKey"}, "get_execution": {"executionId"},
    "list_executions": {"workflowId", "status", "limit"}, "get_state": {"workflowId", "key"},
    "set_state": {"workflowId", "key", "value", "expectedVersion", "ttl"},
}


def calls(url: str, token: str, *steps: tuple[str, dict]) -> list:
    """Each (tool, arguments) called in order in one client session; the results."""
    async def go() -> list:
        async with connected(url, token) as client:
            return [await client.call_tool(name, arguments) for name, arguments in steps]
    return run(go())


def test_initialize_and_list_exactly_the_tools_of_the_design(mcp_url, user):
    token = token_for(user)

    async def go():
        async with connected(mcp_url, token) as client:
            return client.server_info, client.instructions, (await client.list_tools()).tools

    info, instructions, tools = run(go())

    assert info.name == "keeperstate"
    assert "list_actions" in instructions
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        assert set(tool.input_schema.get("properties", {})) == ARGUMENTS[tool.name], tool.name
        assert tool.description


def test_the_modern_protocol_without_a_handshake_works_too(mcp_url, user):
    token = token_for(user)

    async def go():
        async with connected(mcp_url, token, mode="auto") as client:
            return client.protocol_version, (await client.call_tool("list_actions", {}))

    version, result = run(go())

    assert version
    assert not result.is_error


def live_api(site: str, token: str) -> httpx2.Client:
    """The same server's API, with the same token: what each tool's answer is compared with."""
    return httpx2.Client(base_url=site, headers={"Authorization": f"Token {token}"}, timeout=30)


def test_every_tool_answers_what_the_api_answers(site, mcp_url, user, org):
    token = token_for(user)
    api = live_api(site, token)
    nodes, edges = block_monitor_graph()

    [catalogue, created, valid] = calls(
        mcp_url, token, ("list_actions", {}), ("create_workflow", {"name": "Agent monitor", "nodes": nodes,
                                                                   "edges": edges}),
        ("validate_workflow", {"nodes": nodes, "edges": edges}))
    workflow = answer(created)
    wid = workflow["id"]
    [listed, got, updated, ran, state_one, state_all, written] = calls(
        mcp_url, token, ("list_workflows", {"organization": org.slug}), ("get_workflow", {"workflowId": wid}),
        ("update_workflow", {"workflowId": wid, "active": True, "name": "Agent monitor 2"}),
        ("run_workflow", {"workflowId": wid, "input": {"block": 100}}),
        ("get_state", {"workflowId": wid, "key": "cursor"}), ("get_state", {"workflowId": wid}),
        ("set_state", {"workflowId": wid, "key": "cursor", "value": 150, "expectedVersion": 1}))
    execution = answer(ran)
    [one, many] = calls(mcp_url, token, ("get_execution", {"executionId": execution["id"]}),
                        ("list_executions", {"workflowId": wid, "status": "success", "limit": 5}))

    assert answer(catalogue) == api.get("/api/actions/").json()
    assert answer(valid) == api.post("/api/workflows/validate/", json={"nodes": nodes, "edges": edges}).json()
    assert answer(listed) == {"workflows": [{"id": wid, "name": "Agent monitor", "active": False, "nextRunAt": None}]}
    now = api.get(f"/api/workflows/{wid}/").json()
    assert answer(got) | {"name": "Agent monitor 2", "active": True, "updatedAt": now["updatedAt"]} == now
    assert answer(updated) == api.get(f"/api/workflows/{wid}/").json()
    assert execution["status"] == "success"
    assert execution["trigger"] == "api"
    assert answer(one) == api.get(f"/api/executions/{execution['id']}/").json()
    assert [e["id"] for e in answer(many)["executions"]] == [execution["id"]]
    assert answer(state_one)["value"] == 100
    assert answer(state_one)["updatedByExecution"] == execution["id"]
    assert [e["key"] for e in answer(state_all)["results"]] == ["cursor"]
    assert answer(written) == {"key": "cursor", "version": 2, "created": False, "expiresAt": None}
    assert api.get(f"/api/workflows/{wid}/state/cursor/").json()["value"] == 150


def test_a_refused_call_is_an_error_result_with_the_apis_code_and_body(site, mcp_url, user, monitor):
    token = token_for(user)
    api = live_api(site, token)
    missing = str(uuid.uuid4())
    nodes, edges = block_monitor_graph()

    results = calls(
        mcp_url, token,
        ("get_workflow", {"workflowId": missing}),
        ("set_state", {"workflowId": str(monitor.id), "key": "cursor", "value": 1, "expectedVersion": 3}),
        ("set_state", {"workflowId": str(monitor.id), "key": "cursor", "value": None}),
        ("set_state", {"workflowId": str(monitor.id), "key": "cursor", "value": 1, "ttl": 0}),
        ("get_state", {"workflowId": str(monitor.id), "key": "nothing"}),
        ("create_workflow", {"name": "Broken", "nodes": nodes[1:], "edges": []}),
        ("list_executions", {"workflowId": str(monitor.id), "status": "done"}),
        ("validate_workflow", {"nodes": "not a list", "edges": []}),
        ("no_such_tool", {}),
    )

    assert all(r.is_error for r in results)
    bodies = [answer(r) for r in results]
    assert [b["code"] for b in bodies] == [
        "NOT_FOUND", "STATE_VERSION_CONFLICT", "STATE_INVALID_VALUE", "STATE_INVALID_TTL", "STATE_KEY_NOT_FOUND",
        "WORKFLOW_INVALID", "INVALID_CHOICE", "BAD_REQUEST", "NOT_FOUND"]
    assert bodies[0] == api.get(f"/api/workflows/{missing}/").json()
    assert bodies[1]["details"] == {"expected": 3, "current": 0}
    assert bodies[5]["details"]["valid"] is False
    assert "nodes" in bodies[7]["details"]["fields"]


def test_another_organizations_workflow_does_not_exist_for_a_tool(mcp_url, user, foreign_workflow):
    token = token_for(user)
    wid = str(foreign_workflow.id)
    executions = WorkflowExecution.objects.filter(workflow=foreign_workflow).count()

    results = calls(
        mcp_url, token, ("get_workflow", {"workflowId": wid}), ("run_workflow", {"workflowId": wid}),
        ("update_workflow", {"workflowId": wid, "active": True}), ("list_executions", {"workflowId": wid}),
        ("get_state", {"workflowId": wid}), ("set_state", {"workflowId": wid, "key": "cursor", "value": 1}),
        ("list_workflows", {}), ("create_workflow", {"name": "x", "nodes": [], "edges": [], "organization": "globex"}),
    )

    assert [answer(r)["code"] for r in results[:6]] == ["NOT_FOUND"] * 6
    assert answer(results[6]) == {"workflows": []}
    assert answer(results[7])["code"] == "BAD_REQUEST"
    foreign_workflow.refresh_from_db()
    assert foreign_workflow.active is False
    assert WorkflowExecution.objects.filter(workflow=foreign_workflow).count() == executions
    assert not foreign_workflow.organization.memberships.filter(user=user).exists()


def test_run_workflow_with_an_idempotency_key_runs_once(mcp_url, user, monitor):
    token = token_for(user)
    step = ("run_workflow", {"workflowId": str(monitor.id), "input": {"block": 7}, "idempotencyKey": "agent-1"})

    first, again = calls(mcp_url, token, step, step)

    assert answer(first)["id"] == answer(again)["id"]
    assert WorkflowExecution.objects.filter(workflow=monitor).count() == 1


def test_writes_name_the_agent_in_the_history_and_every_call_is_audited(mcp_url, user, monitor):
    token = token_for(user, name="claude")

    calls(mcp_url, token, ("set_state", {"workflowId": str(monitor.id), "key": "cursor", "value": 5}),
          ("get_state", {"workflowId": str(monitor.id), "key": "missing"}))

    event = WorkflowStateEvent.objects.get(workflow=monitor, key="cursor")
    assert event.actor == "mcp:alice (token claude)"
    rows = list(AuditEvent.objects.filter(action__in=["mcp.call", "state.set"]).order_by("id"))
    assert [(r.action, r.details.get("tool"), r.details.get("code")) for r in rows] == [
        ("state.set", None, None), ("mcp.call", "set_state", None), ("mcp.call", "get_state", "STATE_KEY_NOT_FOUND")]
    assert {r.organization_id for r in rows} == {monitor.organization_id}
    assert {r.actor_name for r in rows} == {"alice"}


def _post(url: str, headers: dict[str, str]) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return httpx2.post(url, content=json.dumps(body), timeout=30, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18", **headers})


def test_without_a_valid_token_the_answer_is_the_apis_401(mcp_url, user):
    token = token_for(user)

    missing = _post(mcp_url, {})
    wrong = _post(mcp_url, {"Authorization": "Bearer ks_" + "0" * 64})
    as_api = _post(mcp_url, {"Authorization": f"Token {token}"})

    assert (missing.status_code, missing.json()["code"]) == (401, "NOT_AUTHENTICATED")
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    assert (wrong.status_code, wrong.json()["code"]) == (401, "AUTHENTICATION_FAILED")
    assert as_api.status_code == 200  # the API's own "Token" scheme works too


def test_mcp_calls_are_throttled_like_the_api(user, tmp_path):
    web, base = start_site(tmp_path / "gunicorn.log", KEEPERSTATE_API_RATE="3/min")
    try:
        token = token_for(user)
        statuses = [_post(base + "/mcp/", {"Authorization": f"Bearer {token}"}) for _ in range(4)]
    finally:
        stop_site(web)

    assert [r.status_code for r in statuses] == [200, 200, 200, 429]
    assert statuses[-1].json()["code"] == "THROTTLED"
    assert int(statuses[-1].headers["Retry-After"]) >= 1


def test_a_get_stream_is_refused_405_by_a_stateless_server(mcp_url, user):
    token = token_for(user)

    response = httpx2.get(mcp_url, headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"},
                          timeout=30)

    assert (response.status_code, response.json()["code"]) == (405, "METHOD_NOT_ALLOWED")

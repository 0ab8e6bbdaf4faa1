"""The issue's "done when", played as an agent would: given only the /mcp/ URL and a token, it lists
the actions, builds the block monitor from what the catalogue says (action ids, config fields,
output fields, handles), validates it, creates and activates it, runs it, and reads its cursor.

Run with -s to see the session's tool calls (the closing note quotes them):
    pytest -s tests/mcp/test_agent_session.py
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.mcp.conftest import connected, run, token_for

pytestmark = pytest.mark.django_db(transaction=True)


def short(value: Any, limit: int = 150) -> str:
    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Agent:
    """Calls tools through the SDK's client and keeps a transcript."""

    def __init__(self, client: Any):
        self.client, self.transcript = client, []

    async def call(self, tool: str, arguments: dict[str, Any], shown: dict[str, Any] | None = None,
                   summary: Any = None) -> Any:
        result = await self.client.call_tool(tool, arguments)
        body = json.loads(result.content[0].text)
        said = summary(body) if summary and not result.is_error else body
        self.transcript.append(f"{tool}({short(shown if shown is not None else arguments, 110)})"
                               f"\n    → {'isError ' if result.is_error else ''}{short(said, 330)}")
        assert not result.is_error, body
        return body


def _workflow(w: dict[str, Any]) -> dict[str, Any]:
    return {k: w[k] for k in ("id", "name", "active", "webhookUrl")}


def _execution(e: dict[str, Any]) -> dict[str, Any]:
    return {"id": e["id"], "status": e["status"],
            "nodeResults": {n: r.get("data", "skipped" if r.get("skipped") else r) for n, r in e["nodeResults"].items()
                            if n != "trigger"}}


def build_monitor(catalogue: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    """The block monitor from the catalogue alone: Manual trigger → State Get cursor → Condition
    (new block?) → State Set cursor with compare-and-set on Condition's true handle."""
    actions = {a["id"]: a for a in catalogue["actions"]}
    triggers = {t["id"] for t in catalogue["triggers"]}
    assert {"State Get", "Condition", "State Set"} <= set(actions)
    assert "Manual" in triggers
    get_out = {f["name"] for f in actions["State Get"]["outputFields"]}
    set_fields = {f["name"] for f in actions["State Set"]["configFields"]}
    assert {"exists", "value", "version"} <= get_out
    assert {"key", "value", "expectedVersion"} <= set_fields
    assert "true" in actions["Condition"]["sourceHandles"]

    def node(node_id: str, label: str, kind: str, config: dict[str, Any], y: int) -> dict[str, Any]:
        return {"id": node_id, "type": kind, "position": {"x": 0, "y": y},
                "data": {"label": label, "type": kind, "config": config}}

    nodes = [
        node("trigger", "Trigger", "trigger", {"triggerType": "Manual", "sampleInput": {"block": 100}}, 0),
        node("cursor", "Cursor", "action", {"actionType": "State Get", "key": "cursor"}, 150),
        node("is-new", "New block?", "action", {
            "actionType": "Condition",
            "condition": "not <<@cursor:Cursor.exists>> or <<@trigger:Trigger.block>> > <<@cursor:Cursor.value>>",
        }, 300),
        node("advance", "Advance cursor", "action", {
            "actionType": "State Set", "key": "cursor", "value": "<<@trigger:Trigger.block>>",
            "expectedVersion": "<<@cursor:Cursor.version>>",
        }, 450),
    ]
    edges = [{"id": "e1", "source": "trigger", "target": "cursor"},
             {"id": "e2", "source": "cursor", "target": "is-new"},
             {"id": "e3", "source": "is-new", "target": "advance", "sourceHandle": "true"}]
    return nodes, edges


def test_an_agent_builds_activates_and_runs_the_block_monitor_and_reads_its_cursor(mcp_url, user):
    # given: only the MCP URL and a token
    token = token_for(user, name="agent")

    async def session() -> tuple[list[str], dict[str, Any], list[dict[str, Any]]]:
        async with connected(mcp_url, token) as client:
            agent = Agent(client)
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            agent.transcript.append(f"list_tools() → {', '.join(tools)}")
            catalogue = await agent.call("list_actions", {}, summary=lambda c: {
                "actions": [a["id"] for a in c["actions"]], "triggers": [t["id"] for t in c["triggers"]]})
            nodes, edges = build_monitor(catalogue)
            graph = {"nodes": f"[{len(nodes)} nodes]", "edges": f"[{len(edges)} edges]"}
            report = await agent.call("validate_workflow", {"nodes": nodes, "edges": edges}, shown=graph)
            assert report["valid"], report
            workflow = await agent.call("create_workflow", {"name": "Block monitor (agent)", "nodes": nodes,
                                                            "edges": edges}, shown={"name": "Block monitor (agent)",
                                                                                    **graph}, summary=_workflow)
            wid = workflow["id"]
            activated = await agent.call("update_workflow", {"workflowId": wid, "active": True}, summary=_workflow)
            assert activated["active"] is True
            runs = []
            for block in (100, 101, 100):
                execution = await agent.call("run_workflow", {"workflowId": wid, "input": {"block": block},
                                                              "idempotencyKey": f"block-{block}-{len(runs)}"},
                                             summary=_execution)
                runs.append(execution)
            cursor = await agent.call("get_state", {"workflowId": wid, "key": "cursor"})
            return agent.transcript, cursor, runs

    # when
    transcript, cursor, runs = run(session())

    # then: the first run set the cursor, the second advanced it, the third (an old block) left it
    print("\nMCP session of an agent given only the URL and a token:\n" + "\n".join(transcript))
    assert [r["status"] for r in runs] == ["success"] * 3
    assert runs[0]["nodeResults"]["advance"]["data"]["created"] is True
    assert runs[2]["nodeResults"]["advance"].get("skipped") is True
    assert cursor["value"] == 101
    assert cursor["version"] == 2
    assert cursor["updatedByExecution"] == runs[1]["id"]

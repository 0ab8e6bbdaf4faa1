"""Graphs for execution tests: a counter that a run increments, on any trigger."""

from __future__ import annotations

from typing import Any


def trigger(trigger_type: str = "Manual", **config: Any) -> dict[str, Any]:
    return {
        "id": "trigger",
        "type": "trigger",
        "position": {"x": 0, "y": 0},
        "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": trigger_type, **config}},
    }


def counter_graph(trigger_type: str = "Manual", key: str = "runs", **config: Any):
    """Trigger → State Increment ``key``: the state counts the runs that succeeded."""
    nodes = [
        trigger(trigger_type, **config),
        {
            "id": "count",
            "type": "action",
            "position": {"x": 0, "y": 120},
            "data": {"label": "Count", "type": "action", "config": {"actionType": "State Increment", "key": key}},
        },
    ]
    return nodes, [{"id": "e1", "source": "trigger", "target": "count"}]


def counter_then_call_graph(url: str = "http://127.0.0.1:9/", trigger_type: str = "Manual", key: str = "runs"):
    """Trigger → State Increment ``key`` → HTTP Request GET ``url``: a run with an egress node,
    recorded first and committed node by node (keeperstate.executions.service)."""
    nodes, edges = counter_graph(trigger_type, key)
    nodes.append({
        "id": "call",
        "type": "action",
        "position": {"x": 0, "y": 240},
        "data": {"label": "Call", "type": "action",
                 "config": {"actionType": "HTTP Request", "method": "GET", "url": url, "timeout": 30}},
    })
    edges.append({"id": "e2", "source": "count", "target": "call"})
    return nodes, edges

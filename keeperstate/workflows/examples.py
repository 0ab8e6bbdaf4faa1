"""The reference block monitor, as plain data: driven by its run input (``{"block": 100}``), it
calls nothing, so the docs' API session, the benchmarks and the tests run it anywhere.

Trigger → State Get cursor → Condition (new block?) → State Set cursor with compare-and-set.
Its positions are what the editor's Auto-layout makes of it (tests/browser/test_demo_layout.py).
"""

from __future__ import annotations

from typing import Any

Graph = tuple[list[dict[str, Any]], list[dict[str, Any]]]


def block_monitor_graph(base_url: str = "") -> Graph:
    """Trigger → State Get cursor → Condition (new block?) → State Set cursor with CAS, driven by
    the run input (``{"block": 100}``); it calls nothing, so it ignores ``base_url``."""
    nodes = [
        {
            "id": "trigger",
            "type": "trigger",
            "position": {"x": 0, "y": 0},
            "data": {"label": "Trigger", "type": "trigger",
                     "config": {"triggerType": "Manual", "sampleInput": {"block": 100}}},
        },
        {
            "id": "state-get-1",
            "type": "action",
            "position": {"x": 0, "y": 159},
            "data": {"label": "State Get", "type": "action", "config": {"actionType": "State Get", "key": "cursor"}},
        },
        {
            "id": "condition-1",
            "type": "action",
            "position": {"x": 0, "y": 318},
            "data": {
                "label": "New block?",
                "type": "action",
                "config": {
                    "actionType": "Condition",
                    "condition": "not <<@state-get-1:State Get.exists>> "
                    "or <<@trigger:Trigger.block>> > <<@state-get-1:State Get.value>>",
                },
            },
        },
        {
            "id": "state-set-1",
            "type": "action",
            "position": {"x": -140, "y": 513},
            "data": {
                "label": "State Set",
                "type": "action",
                "config": {
                    "actionType": "State Set",
                    "key": "cursor",
                    "value": "<<@trigger:Trigger.block>>",
                    "expectedVersion": "<<@state-get-1:State Get.version>>",
                },
            },
        },
    ]
    edges = [
        {"id": "e1", "source": "trigger", "target": "state-get-1"},
        {"id": "e2", "source": "state-get-1", "target": "condition-1"},
        {"id": "e3", "source": "condition-1", "target": "state-set-1", "sourceHandle": "true"},
    ]
    return nodes, edges

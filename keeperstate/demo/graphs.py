"""The demo's workflow graphs, as plain data: no database, so tests and the benchmarks use them
whether or not the demo app is installed.

The reference monitor driven by its input is keeperstate.workflows.examples.block_monitor_graph;
the demo organization's Block monitor is ``live_block_monitor_graph``, which fetches the demo's
own block feed and posts alerts (keeperstate.demo.feed) with an organization secret.

Each demo graph's positions are what the editor's Auto-layout makes of it with the cards as they
render (top-down, 70 px between ranks, a Condition's true branch 140 px to the left), so the editor
opens them as they are (tests/browser/test_demo_layout.py).
"""

from __future__ import annotations

from typing import Any

from keeperstate.workflows.examples import Graph

ALERTS_SECRET = "ALERTS_TOKEN"  # the demo organization's secret the alerts endpoint checks

FEED_PATH = "/demo/feed/"
RPC_PATH = "/demo/rpc/"  # the demo chain's JSON-RPC node (keeperstate.demo.chain)
ALERTS_PATH = "/demo/alerts/"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"


def live_block_monitor_graph(base_url: str = DEFAULT_BASE_URL) -> Graph:
    """The demo organization's monitor: fetch the demo feed's latest block with HTTP Request,
    keep the cursor with compare-and-set, and post one alert per new block.

    Schedule (10 s) → Fetch block → State Get cursor → New block? → State Set cursor (CAS) → Send alert.
    The alert follows the write, so of two runs that see the same new block only the one whose
    compare-and-set won alerts. ``base_url`` is where the site itself is served (``serve``
    passes its own address and allows it in KEEPERSTATE_HTTP_ALLOW).
    """
    base = base_url.rstrip("/")
    fetched = "<<@fetch-block:Fetch block.body.block>>"

    def action(node_id: str, label: str, x: int, y: int, config: dict[str, Any]) -> dict[str, Any]:
        return {"id": node_id, "type": "action", "position": {"x": x, "y": y},
                "data": {"label": label, "type": "action", "config": config}}

    nodes = [
        {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
         "data": {"label": "Every 10 s", "type": "trigger",
                  "config": {"triggerType": "Schedule", "interval": 10, "overlap": "skip"}}},
        action("fetch-block", "Fetch block", 0, 174,
               {"actionType": "HTTP Request", "method": "GET", "url": base + FEED_PATH, "responseType": "json"}),
        action("state-get-1", "State Get", 0, 376, {"actionType": "State Get", "key": "cursor"}),
        action("condition-1", "New block?", 0, 535,
               {"actionType": "Condition",
                "condition": f"not <<@state-get-1:State Get.exists>> or {fetched} > <<@state-get-1:State Get.value>>"}),
        action("state-set-1", "State Set", -140, 710,
               {"actionType": "State Set", "key": "cursor", "value": fetched,
                "expectedVersion": "<<@state-get-1:State Get.version>>"}),
        action("send-alert", "Send alert", -140, 906,
               {"actionType": "HTTP Request", "method": "POST", "url": base + ALERTS_PATH,
                "headers": {"Authorization": f"Bearer <<@__secrets:Secrets.{ALERTS_SECRET}>>"},
                "body": f'{{"block": {fetched}, "previous": <<@state-get-1:State Get.value>>, '
                        '"cursorVersion": <<@state-set-1:State Set.version>>}'}),
    ]
    edges = [
        {"id": "e1", "source": "trigger", "target": "fetch-block"},
        {"id": "e2", "source": "fetch-block", "target": "state-get-1"},
        {"id": "e3", "source": "state-get-1", "target": "condition-1"},
        {"id": "e4", "source": "condition-1", "target": "state-set-1", "sourceHandle": "true"},
        {"id": "e5", "source": "state-set-1", "target": "send-alert"},
    ]
    return nodes, edges


def heartbeat_graph(base_url: str = "") -> Graph:
    """Schedule (every 15 s) → State Increment beats → State Set lastBeat: runs by itself.
    (It calls nothing, so it ignores ``base_url``.)"""
    nodes = [
        {
            "id": "trigger",
            "type": "trigger",
            "position": {"x": 0, "y": 0},
            "data": {"label": "Every 15 s", "type": "trigger",
                     "config": {"triggerType": "Schedule", "interval": 15, "overlap": "skip"}},
        },
        {
            "id": "count-1",
            "type": "action",
            "position": {"x": 0, "y": 174},
            "data": {"label": "Count beats", "type": "action",
                     "config": {"actionType": "State Increment", "key": "beats"}},
        },
        {
            "id": "state-set-1",
            "type": "action",
            "position": {"x": 0, "y": 333},
            "data": {"label": "Remember the tick", "type": "action",
                     "config": {"actionType": "State Set", "key": "lastBeat",
                                "value": "<<@trigger:Every 15 s.scheduledFor>>"}},
        },
    ]
    edges = [
        {"id": "e1", "source": "trigger", "target": "count-1"},
        {"id": "e2", "source": "count-1", "target": "state-set-1"},
    ]
    return nodes, edges

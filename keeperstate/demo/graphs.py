"""The demo's workflow graphs, as plain data: no database, so tests and the benchmarks use them
whether or not the demo app is installed.

The reference monitor driven by its input is keeperstate.workflows.examples.block_monitor_graph;
the demo organization's Block monitor is ``live_block_monitor_graph``, which fetches the demo's
own block feed and posts alerts (keeperstate.demo.feed) with an organization secret, and its
Reorg-safe monitor ``live_reorg_safe_monitor_graph`` (examples.reorg_safe_monitor_graph on the demo
chain, which reorganises).

Each demo graph's positions are what the editor's Auto-layout makes of it with the cards as they
render (top-down, 70 px between ranks, a Condition's true branch 140 px to the left), so the editor
opens them as they are (tests/browser/test_demo_layout.py).
"""

from __future__ import annotations

from typing import Any

from keeperstate.workflows.examples import Graph, reorg_safe_monitor_graph

ALERTS_SECRET = "ALERTS_TOKEN"  # the demo organization's secret the alerts endpoint checks

FEED_PATH = "/demo/feed/"
RPC_PATH = "/demo/rpc/"  # the demo chain's JSON-RPC node (keeperstate.demo.chain)
ALERTS_PATH = "/demo/alerts/"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
# The monitor's catch-up pace: a monitor far behind (a server off for a day) takes this many blocks
# a tick, so a run stays short and range() never grows past its bound.
BLOCKS_PER_RUN = 100


def live_block_monitor_graph(base_url: str = DEFAULT_BASE_URL, *, rpc_url: str | None = None,
                             alerts_url: str | None = None) -> Graph:
    """The demo organization's monitor, exact against a chain: every block alerted
    once, every block.

    Every 10 s → Head (eth_blockNumber, JSON-RPC) → Cursor (State Get) → Range (Set Fields: the
    head as a number, the first block not yet seen, and the last of this run: at most
    BLOCKS_PER_RUN after it) → Each block (For Each over range(start, end)) —each→ Block number
    (Set Fields: its hex) → Block (eth_getBlockByNumber) → Send alert → Save cursor (State Set),
    one block at a time.

    The alert goes before the cursor moves, so a run cut short between the two sends that block's
    alert again on the next run: delivery is at least once, and the alert carries the block's
    hash as its ``dedupKey``, which the receiver (the demo's alert sink, like PagerDuty's
    dedup_key) keeps once. The cursor advances per block, so the next run starts after the last
    block it finished. ``rpc_url``/``alerts_url`` default to the demo's own feed and sink at
    ``base_url`` (``serve`` passes its address); the real-chain test points them at ganache.
    """
    base = base_url.rstrip("/")
    rpc = rpc_url or base + RPC_PATH
    alerts = alerts_url or base + ALERTS_PATH
    item, index = "<<@each-block:Each block.item>>", "<<@each-block:Each block.index>>"

    def action(node_id: str, label: str, x: int, y: int, config: dict[str, Any]) -> dict[str, Any]:
        return {"id": node_id, "type": "action", "position": {"x": x, "y": y},
                "data": {"label": label, "type": "action", "config": config}}

    def rpc_call(body: dict[str, Any]) -> dict[str, Any]:
        return {"actionType": "HTTP Request", "method": "POST", "url": rpc, "jsonRpc": True, "body": body}

    nodes = [
        {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
         "data": {"label": "Every 10 s", "type": "trigger",
                  "config": {"triggerType": "Schedule", "interval": 10, "overlap": "skip"}}},
        action("head", "Head", 0, 174, rpc_call({"method": "eth_blockNumber", "params": []})),
        action("cursor", "Cursor", 0, 405, {"actionType": "State Get", "key": "cursor"}),
        action("range", "Range", 0, 564, {"actionType": "Set Fields", "fields": [
            {"name": "head", "expression": "number(<<@head:Head.result>>)"},
            {"name": "start",
             "expression": "if(<<@cursor:Cursor.exists>>, number(<<@cursor:Cursor.value>>) + 1, head)"},
            {"name": "end", "expression": f"min(head, start + {BLOCKS_PER_RUN - 1})"},
        ]}),
        action("each-block", "Each block", 0, 776, {"actionType": "For Each", "items": (
            "range(<<@range:Range.start>>, <<@range:Range.end>>)"), "maxItems": BLOCKS_PER_RUN}),
        action("block-number", "Block number", -140, 970, {"actionType": "Set Fields", "fields": [
            {"name": "hex", "expression": f"hex({item})"},
        ]}),
        action("block", "Block", -140, 1132, rpc_call(
            {"method": "eth_getBlockByNumber", "params": ["<<@block-number:Block number.hex>>", False]})),
        action("send-alert", "Send alert", -140, 1363,
               {"actionType": "HTTP Request", "method": "POST", "url": alerts,
                "headers": {"Authorization": f"Bearer <<@__secrets:Secrets.{ALERTS_SECRET}>>"},
                "body": {"block": item, "hash": "<<@block:Block.result.hash>>",
                         "dedupKey": "<<@block:Block.result.hash>>",
                         "execution": "<<@__system:System.executionId>>", "index": index}}),
        action("save-cursor", "Save cursor", -140, 1613,
               {"actionType": "State Set", "key": "cursor", "value": item}),
    ]
    edges = [
        {"id": "e1", "source": "trigger", "target": "head"},
        {"id": "e2", "source": "head", "target": "cursor"},
        {"id": "e3", "source": "cursor", "target": "range"},
        {"id": "e4", "source": "range", "target": "each-block"},
        {"id": "e5", "source": "each-block", "target": "block-number", "sourceHandle": "each"},
        {"id": "e6", "source": "block-number", "target": "block"},
        {"id": "e7", "source": "block", "target": "send-alert"},
        {"id": "e8", "source": "send-alert", "target": "save-cursor"},
    ]
    return nodes, edges


def live_reorg_safe_monitor_graph(base_url: str = DEFAULT_BASE_URL) -> Graph:
    """The demo organization's Reorg-safe monitor: keeperstate.workflows.examples'
    reorg_safe_monitor_graph on the demo chain, which reorganises (KEEPERSTATE_DEMO_REORG_EVERY),
    alerting to the demo's sink with the organization's ALERTS_TOKEN."""
    base = base_url.rstrip("/")
    return reorg_safe_monitor_graph(base + RPC_PATH, base + ALERTS_PATH, alerts_secret=ALERTS_SECRET)


def legacy_live_block_monitor_graph(base_url: str = DEFAULT_BASE_URL) -> Graph:
    """The demo monitor as it was seeded before For Each (kept to recognise an untouched one and
    replace it, keeperstate.demo.seeding): fetch the feed's latest block, keep the cursor with
    compare-and-set, and post one alert per new block it saw (a block mined between ticks was missed).

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

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


# --- the reorg-safe chain monitor (docs/http-and-secrets.md, "A monitor that survives reorganisations") ---

MAX_REORG_DEPTH = 12  # blocks a reorganisation may replace and still be followed
BLOCKS_PER_RUN = 100  # the monitor's catch-up pace, as the demo's Block monitor's
EXAMPLE_RPC_URL = "http://127.0.0.1:8000/demo/rpc/"  # `manage.py serve`'s demo chain and alert sink
EXAMPLE_ALERTS_URL = "http://127.0.0.1:8000/demo/alerts/"


def reorg_safe_monitor_graph(
    rpc_url: str = EXAMPLE_RPC_URL,
    alerts_url: str = EXAMPLE_ALERTS_URL,
    *,
    alerts_secret: str = "ALERTS_TOKEN",
    max_reorg_depth: int = MAX_REORG_DEPTH,
    confirmations: int = 0,
    interval: int = 10,
) -> Graph:
    """A block monitor that stays exact when the chain reorganises (DESIGN.md §14), built from the
    palette's actions only: every block of the canonical chain alerted once, in order; a block the
    chain replaced named in one ``reorg`` alert; a reorganisation deeper than ``max_reorg_depth``
    fails the run (FAILED_BY_WORKFLOW) after alerting.

    The cursor (state key ``cursor``) is ``{"number", "hash", "recent", "sent"}``: the last block
    taken; the hashes of the last ``2 × max_reorg_depth + 1`` blocks taken, oldest first (the newest
    is ``hash``; twice the depth, so that right after a rewind it still holds ``max_reorg_depth``
    below the cursor); and whether the last one's alert went out. A block is taken (written,
    ``sent`` false) before its alert and marked sent after it, so the cursor holds every block that
    may have been alerted. Each run:

    1. **Check cursor**, a For Each over the newest ``max_reorg_depth + 1`` of ``recent``, newest
       first, fetches the block at each height and stops (Stop Loop) at the first whose hash the
       chain still has: the cursor's own block when nothing changed (one call), else the common
       ancestor, ``depth`` blocks below.
    2. None found (deeper than ``max_reorg_depth``) → **Reorg too deep** alert, then **Fail Run**.
       Found below the cursor → **Reorg alert** (the replaced range and their old hashes), then
       **Rewind cursor** to the ancestor with compare-and-set. The cursor's block still there but
       not marked sent (a run died around its alert) → **Resend alert**, then mark it sent.
    3. **Each block** from the block after the cursor (or the ancestor; on the first run,
       ``2 × max_reorg_depth`` blocks below the head, so there are hashes to walk back over) to the
       head less ``confirmations``, at most BLOCKS_PER_RUN a run: fetch it, re-read the cursor, and
       only if its ``parentHash`` is the cursor's hash take it (compare-and-set), alert it and mark
       it sent. A block that does not follow (the chain changed during the run) stops the loop (Stop
       Loop): the next run finds the reorganisation in step 1.

    Delivery is at least once: a run cut short around an alert sends it again, or names its block
    in a reorg alert. Every alert has a ``dedupKey`` (``block-<hash>``, ``reorg-<ancestor>-<old
    hash>``, ``reorg-too-deep-<hash>``) by which a receiver keeps it once. ``alerts_secret`` names
    the organization secret sent as the bearer token. Positions are what the editor's Auto-layout
    makes of it (tests/browser/test_demo_layout.py).
    """
    cursor_value = "<<@cursor:Cursor.value>>"
    exists = "<<@cursor:Cursor.exists>>"
    item = "<<@each-block:Each block.item>>"
    block = "<<@block:Block.result>>"
    saved, saved_value = "<<@saved:Last saved.exists>>", "<<@saved:Last saved.value>>"
    chain_block = "<<@chain-block:Chain block.result>>"
    max_depth = "<<@settings:Settings.maxReorgDepth>>"
    authorization = {"Authorization": f"Bearer <<@__secrets:Secrets.{alerts_secret}>>"}

    def action(node_id: str, label: str, x: int, y: int, config: dict[str, Any]) -> dict[str, Any]:
        return {"id": node_id, "type": "action", "position": {"x": x, "y": y},
                "data": {"label": label, "type": "action", "config": config}}

    def rpc_call(body: dict[str, Any]) -> dict[str, Any]:
        return {"actionType": "HTTP Request", "method": "POST", "url": rpc_url, "jsonRpc": True, "body": body}

    def alert(body: dict[str, Any]) -> dict[str, Any]:
        return {"actionType": "HTTP Request", "method": "POST", "url": alerts_url, "headers": authorization,
                "body": {**body, "execution": "<<@__system:System.executionId>>"}}

    def fields(*assignments: tuple[str, str]) -> dict[str, Any]:
        return {"actionType": "Set Fields", "fields": [{"name": n, "expression": e} for n, e in assignments]}

    def write_cursor(value: dict[str, Any], expected_version: str) -> dict[str, Any]:
        return {"actionType": "State Set", "key": "cursor", "value": value, "expectedVersion": expected_version}

    def block_alert(number: str, result: str) -> dict[str, Any]:
        return alert({"type": "block", "block": number, "hash": f"<<@{result}.hash>>",
                      "parentHash": f"<<@{result}.parentHash>>", "dedupKey": f"block-<<@{result}.hash>>"})

    nodes = [
        {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
         "data": {"label": f"Every {interval} s", "type": "trigger",
                  "config": {"triggerType": "Schedule", "interval": interval, "overlap": "skip"}}},
        action("settings", "Settings", 0, 174, fields(
            ("maxReorgDepth", str(max_reorg_depth)),
            ("confirmations", str(confirmations)),
        )),
        action("head", "Head", 0, 348, rpc_call({"method": "eth_blockNumber", "params": []})),
        action("cursor", "Cursor", 0, 579, {"actionType": "State Get", "key": "cursor"}),
        # 1. Is the cursor's block still in the chain? If not, which block below it is?
        action("check", "Check cursor", 0, 738, {
            "actionType": "For Each",
            "items": f"if({exists}, slice(reverse({cursor_value}['recent']), 0, {max_depth} + 1), [])",
            "maxItems": BLOCKS_PER_RUN,
        }),
        action("kept", "Kept block", -140, 958, fields(
            ("number", f"{cursor_value}['number'] - <<@check:Check cursor.index>>"),
            ("hex", "hex(number)"),
        )),
        action("chain-block", "Chain block", -140, 1239, rpc_call(
            {"method": "eth_getBlockByNumber", "params": ["<<@kept:Kept block.hex>>", False]})),
        action("still", "Still in the chain?", -233, 1470, {
            "actionType": "Condition",
            "condition": f"{chain_block} != null and {chain_block}['hash'] == <<@check:Check cursor.item>>",
        }),
        action("found", "Found it", -408, 1717, {"actionType": "Stop Loop"}),
        action("resume", "Resume", 140, 958, fields(
            ("found", f"not {exists} or <<@check:Check cursor.stopped>>"),
            ("depth", f"if({exists}, <<@check:Check cursor.count>> - 1, 0)"),
            ("start", f"if({exists}, {cursor_value}['number'] - depth + 1, null)"),
            ("sent", f"not {exists} or {cursor_value}['sent']"),
        )),
        # 2. Too deep: alert, then fail. Replaced: one reorg alert, then the cursor back. Not sent: again.
        action("ancestor-found", "Ancestor found?", 140, 1239,
               {"actionType": "Condition", "condition": "<<@resume:Resume.found>>"}),
        action("too-deep-alert", "Reorg too deep", 327, 1470, alert({
            "type": "reorg-too-deep",
            "cursor": cursor_value,
            "maxReorgDepth": "<<@settings:Settings.maxReorgDepth>>",
            "dedupKey": "reorg-too-deep-<<@cursor:Cursor.value.hash>>",
        })),
        action("too-deep", "Stop: reorg too deep", 432, 1717, {
            "actionType": "Fail Run",
            "message": "The chain no longer has any of the blocks this monitor kept (up to block "
                       "<<@cursor:Cursor.value.number>>): it reorganised deeper than maxReorgDepth "
                       "(<<@settings:Settings.maxReorgDepth>>). Check the chain; to start again at its head, "
                       "delete the state key cursor.",
            "details": {"block": "<<@cursor:Cursor.value.number>>", "hash": "<<@cursor:Cursor.value.hash>>",
                        "maxReorgDepth": "<<@settings:Settings.maxReorgDepth>>"},
        }),
        action("reorganised", "Reorganised?", 47, 1470,
               {"actionType": "Condition", "condition": "<<@resume:Resume.depth>> > 0"}),
        action("replaced", "Replaced", -128, 1717, fields(
            ("ancestor", "<<@resume:Resume.start>> - 1"),
            ("recent", f"{cursor_value}['recent']"),
            ("oldHashes", "slice(recent, -<<@resume:Resume.depth>>)"),
            ("kept", "slice(recent, 0, -<<@resume:Resume.depth>>)"),
            ("ancestorHash", "kept[-1]"),
            ("key", f"'reorg-' + text(ancestor) + '-' + {cursor_value}['hash']"),
        )),
        action("reorg-alert", "Reorg alert", -128, 2019, alert({
            "type": "reorg",
            "from": "<<@resume:Resume.start>>",
            "to": "<<@cursor:Cursor.value.number>>",
            "depth": "<<@resume:Resume.depth>>",
            "oldHashes": "<<@replaced:Replaced.oldHashes>>",
            "ancestor": "<<@replaced:Replaced.ancestor>>",
            "ancestorHash": "<<@replaced:Replaced.ancestorHash>>",
            "dedupKey": "<<@replaced:Replaced.key>>",
        })),
        action("rewind", "Rewind cursor", -128, 2269, write_cursor(
            {"number": "<<@replaced:Replaced.ancestor>>", "hash": "<<@replaced:Replaced.ancestorHash>>",
             "recent": "<<@replaced:Replaced.kept>>", "sent": True},
            "<<@cursor:Cursor.version>>")),
        action("sent", "Last alert sent?", 152, 1717,
               {"actionType": "Condition", "condition": "<<@resume:Resume.sent>>"}),
        # after the loop Chain block reads as its last iteration: the cursor's own block, still there
        action("resend", "Resend alert", 292, 2019, block_alert(
            "<<@cursor:Cursor.value.number>>", "chain-block:Chain block.result")),
        action("resent", "Mark resent", 292, 2269, write_cursor(
            {"number": "<<@cursor:Cursor.value.number>>", "hash": "<<@cursor:Cursor.value.hash>>",
             "recent": "<<@cursor:Cursor.value.recent>>", "sent": True},
            "<<@cursor:Cursor.version>>")),
        # 3. The blocks after it, each taken only if it follows the block taken before it.
        action("range", "Range", 59, 2478, fields(
            ("head", "number(<<@head:Head.result>>)"),
            ("safe", "head - <<@settings:Settings.confirmations>>"),
            # the first run starts 2 × maxReorgDepth blocks back, so it keeps hashes to walk back over
            ("start", "coalesce(<<@resume:Resume.start>>, max(safe - 2 * <<@settings:Settings.maxReorgDepth>>, 0))"),
            ("end", f"min(safe, start + {BLOCKS_PER_RUN - 1})"),
        )),
        action("each-block", "Each block", 59, 2718, {
            "actionType": "For Each", "items": "range(<<@range:Range.start>>, <<@range:Range.end>>)",
            "maxItems": BLOCKS_PER_RUN,
        }),
        action("block-number", "Block number", -81, 2912, fields(("hex", f"hex({item})"))),
        action("block", "Block", -81, 3074, rpc_call(
            {"method": "eth_getBlockByNumber", "params": ["<<@block-number:Block number.hex>>", False]})),
        action("saved", "Last saved", -81, 3305, {"actionType": "State Get", "key": "cursor"}),
        action("follows", "Follows the cursor?", -81, 3464, {
            "actionType": "Condition",
            "condition": f"{block} != null and (not {saved} or {block}['parentHash'] == {saved_value}['hash'])",
        }),
        action("next-cursor", "Next cursor", -221, 3672, fields(
            ("kept", f"if({saved}, {saved_value}['recent'], [])"),
            ("recent", f"slice(append(kept, {block}['hash']), -(2 * {max_depth} + 1))"),
        )),
        # taken before its alert: a run that dies around the alert leaves it in the cursor, not sent
        action("save-cursor", "Save cursor", -221, 3882, write_cursor(
            {"number": item, "hash": "<<@block:Block.result.hash>>", "recent": "<<@next-cursor:Next cursor.recent>>",
             "sent": False},
            "<<@saved:Last saved.version>>")),
        action("send-alert", "Send alert", -221, 4091, block_alert(item, "block:Block.result")),
        action("mark-sent", "Mark sent", -221, 4341, write_cursor(
            {"number": item, "hash": "<<@block:Block.result.hash>>", "recent": "<<@next-cursor:Next cursor.recent>>",
             "sent": True},
            "<<@save-cursor:Save cursor.version>>")),
        action("moved", "Stop: the chain moved", 59, 3672, {"actionType": "Stop Loop"}),
    ]
    chain = [
        ("trigger", "settings", None), ("settings", "head", None), ("head", "cursor", None),
        ("cursor", "check", None),
        ("check", "kept", "each"), ("kept", "chain-block", None), ("chain-block", "still", None),
        ("still", "found", "true"),
        ("check", "resume", "done"), ("resume", "ancestor-found", None),
        ("ancestor-found", "too-deep-alert", "false"), ("too-deep-alert", "too-deep", None),
        ("ancestor-found", "reorganised", "true"),
        ("reorganised", "replaced", "true"), ("replaced", "reorg-alert", None), ("reorg-alert", "rewind", None),
        ("reorganised", "sent", "false"), ("sent", "resend", "false"), ("resend", "resent", None),
        ("rewind", "range", None), ("sent", "range", "true"), ("resent", "range", None),
        ("range", "each-block", None),
        ("each-block", "block-number", "each"), ("block-number", "block", None), ("block", "saved", None),
        ("saved", "follows", None),
        ("follows", "next-cursor", "true"), ("next-cursor", "save-cursor", None),
        ("save-cursor", "send-alert", None), ("send-alert", "mark-sent", None),
        ("follows", "moved", "false"),
    ]
    edges = []
    for number, (source, target, handle) in enumerate(chain, start=1):
        edge: dict[str, Any] = {"id": f"e{number}", "source": source, "target": target}
        if handle:
            edge["sourceHandle"] = handle
        edges.append(edge)
    return nodes, edges
